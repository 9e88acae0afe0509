"""FlipAim: which evaluation of which gate a flip replay flips, and its form in a file.

A flipped run is written as a counterexample (``backends.counterexample``): a scenario's
``flip`` key, or the file ``launch(..., gates="flip", flip=PATH)`` reads. Both hold
``to_dict()``'s mapping. The gate's file is named there as reports name it (relative to the
directory the run started in when it lies below it), so a replay matches a rewritten gate's
file by that path's end: the same file from the same checkout, wherever it sits.
"""

from __future__ import annotations

from dataclasses import dataclass

_KEYS = ("site", "condition", "rank", "evaluation", "col")


@dataclass(frozen=True)
class FlipAim:
    """The gate at ``path:line`` (column ``col``) on global rank ``rank``, its
    ``evaluation``-th evaluation (1-based). ``site`` and ``condition`` name the gate as the
    report's ``likely:`` line does (``path:line`` and the test's source text)."""

    path: str
    line: int
    rank: int
    evaluation: int
    col: int = 0
    site: str = ""
    condition: str = ""

    def __post_init__(self) -> None:
        if self.line < 1 or self.rank < 0 or self.evaluation < 1 or self.col < 0:
            raise ValueError(f"flip aim {self!r}: line, rank, evaluation or col out of range")

    def matches(self, path: str) -> bool:
        """Whether a rewritten gate's file (a code object's ``co_filename``) is the aim's."""
        mine = self.path
        return path == mine or (not mine.startswith("/") and
                                path.replace("\\", "/").endswith("/" + mine.lstrip("./")))

    def to_dict(self) -> dict:
        """The aim as a counterexample file holds it."""
        return {"site": self.site or f"{self.path}:{self.line}", "condition": self.condition,
                "rank": self.rank, "evaluation": self.evaluation, "col": self.col}

    @classmethod
    def from_dict(cls, value, where: str) -> FlipAim:
        """The aim a file holds; ValueError naming ``where`` and the field otherwise."""
        if not isinstance(value, dict):
            raise ValueError(f"{where}: must be a mapping of {', '.join(_KEYS)}, got {value!r}")
        unknown = sorted(set(value) - set(_KEYS))
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown key (expected {', '.join(_KEYS)})")
        site = value.get("site")
        path, _, line = site.rpartition(":") if isinstance(site, str) else ("", "", "")
        if not path or not line.isdigit():
            raise ValueError(f"{where}.site: {site!r} must be 'path:line'")
        for key in ("rank", "evaluation", "col"):
            if not isinstance(value.get(key, 0), int) or isinstance(value.get(key), bool):
                raise ValueError(f"{where}.{key}: {value.get(key)!r} must be an integer")
        condition = value.get("condition", "")
        if not isinstance(condition, str):
            raise ValueError(f"{where}.condition: {condition!r} must be the test's source text")
        try:
            return cls(path, int(line), value.get("rank", -1), value.get("evaluation", 0),
                       value.get("col", 0), str(site), condition)
        except ValueError:
            raise ValueError(f"{where}: rank must be >= 0, evaluation >= 1, col >= 0 "
                             f"(got {value!r})") from None
