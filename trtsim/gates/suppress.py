"""Suppression comments: ``# trtsim: uniform(tp) -- every TP rank gets the same requests``.

On a gate's line, the comment says that the gate's condition is uniform on the named groups
(``uniform`` alone: on every group) and why. The reason is required: a suppression is a claim
a reviewer must be able to check. The lint skips a suppressed gate for those groups and lists
it under ``--explain``; a run-time observer reads the same comment through the same function.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

from ..checks import MAX_EXCERPT, excerpt

_MARK = re.compile(r"#\s*trtsim\s*:\s*(?P<body>.*)$")
_BODY = re.compile(r"uniform\s*(?:\((?P<groups>[^)]*)\))?\s*--\s*(?P<reason>\S.*)$")
_GROUP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Suppression:
    """One ``# trtsim: uniform(...) -- reason`` comment: its line, the groups it covers
    (empty: every group) and the reason."""

    line: int
    groups: tuple[str, ...]
    reason: str

    def __post_init__(self) -> None:
        if not isinstance(self.line, int) or self.line < 1:
            raise ValueError(f"line={self.line!r} must be an integer >= 1")
        if not self.reason.strip():
            raise ValueError(f"reason={self.reason!r}: a suppression needs a reason")
        bad = [g for g in self.groups if not _GROUP.match(g)]
        if bad:
            raise ValueError(f"groups={bad!r}: a group is a name such as tp, pp, dp, world")

    def covers(self, group: str) -> bool:
        """Whether the comment declares the gate uniform on ``group``."""
        return not self.groups or group in self.groups or "world" in self.groups

    @property
    def text(self) -> str:
        """The comment as it would be written."""
        groups = f"({', '.join(self.groups)})" if self.groups else ""
        return f"# trtsim: uniform{groups} -- {self.reason}"


def parse_suppression(comment: str, line: int) -> Suppression | None:
    """The suppression a comment holds; None for a comment that is not one of trtsim's;
    ``ValueError`` naming the line for a ``# trtsim:`` comment that does not parse."""
    mark = _MARK.search(comment)
    if mark is None:
        return None
    body = _BODY.match(mark.group("body").strip())
    if body is None:
        raise ValueError(f"line {line}: {excerpt(comment.strip(), MAX_EXCERPT)} is not "
                         "'# trtsim: uniform(GROUP[, GROUP]) -- reason'")
    groups = tuple(g.strip() for g in (body.group("groups") or "").split(",") if g.strip())
    return Suppression(line, groups, body.group("reason").strip())


def suppressions_in(source: str) -> dict[int, Suppression]:
    """Line -> suppression, for every ``# trtsim:`` comment of a module's source (read with
    ``tokenize``, so a ``#`` inside a string is no comment). ``ValueError`` as above."""
    if "trtsim" not in source:          # the common case: no tokenizing at all
        return {}
    out = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                found = parse_suppression(tok.string, tok.start[0])
                if found is not None:
                    out[found.line] = found
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass                            # the parser reports broken source; keep what was read
    return out
