"""The reports a launch raises. ``str(err)`` is the human report; ``err.to_dict()`` is JSON."""

from __future__ import annotations

import ast
import sys
from typing import Any

from ..layout.places import rank_label, ranks_label
from .records import CallRecord
from .purpose_paths import distinct_paths

VERDICTS = ("ok", "mismatch", "deadlock", "failed")


def rank_name(rec: CallRecord) -> str:
    """The rank that made ``rec``, named as every report names ranks."""
    return rank_label(rec.instance, rec.local_rank if rec.instance else rec.rank, rec.rank)


def group_name(kind: str, ranks, rec: CallRecord | None) -> str:
    """A group of global ranks named like its members (``rec``: any member's record, which
    says the instance): ``gen pp group [0, 2] (global [8, 10])``."""
    offset = rec.rank - rec.local_rank if rec is not None and rec.instance else 0
    return ranks_label(rec.instance if rec else "", ranks, offset, f"{kind or '?'} group")


def verdict_of(error: "CollectiveError | None") -> str:
    """The verdict a run's report gives: ok, mismatch, deadlock, or failed (a rank failed or
    the launch timed out)."""
    if error is None:
        return "ok"
    return error.kind if error.kind in ("mismatch", "deadlock") else "failed"


class CollectiveError(Exception):
    """Base of every report: a group, the ranks involved and their calls."""

    kind = "error"

    def __init__(self, summary: str, *, group_kind: str = "", group_ranks: tuple[int, ...] = (),
                 ranks: tuple[int, ...] = (), calls: dict[int, CallRecord] | None = None,
                 explanation: str = "", details: tuple[str, ...] = ()):
        self.summary = summary
        self.group_kind = group_kind
        self.group_ranks = tuple(sorted(group_ranks))    # a set of ranks, whatever its order
        self.ranks = tuple(ranks)
        self.calls = dict(calls or {})
        self.explanation = explanation
        self.details = tuple(details)
        super().__init__(summary)

    def __reduce__(self):
        return (_rebuild, (type(self), self.summary, self._state()))

    def _state(self) -> dict[str, Any]:
        return dict(group_kind=self.group_kind, group_ranks=self.group_ranks, ranks=self.ranks,
                    calls=self.calls, explanation=self.explanation, details=self.details)

    def __str__(self) -> str:
        lines = [f"{type(self).__name__}: {self.summary}"]
        if self.group_ranks:
            member = next((self.calls[r] for r in self.group_ranks if r in self.calls), None)
            lines.append(f"  group: {group_name(self.group_kind, self.group_ranks, member)}")
        # members at one call site for different purposes: the site alone hides the split
        one_site = len({c.callsite for c in self.calls.values()}) == 1
        paths = distinct_paths({r: c.purpose for r, c in self.calls.items()}) if one_site else {}
        for rank in sorted(self.calls):
            rec = self.calls[rank]
            lines.append(f"  {rank_name(rec)}: {rec.short():<48} at {rec.callsite}")
            if rank in paths:
                lines.append(f"      via {paths[rank]}")
        lines.extend(f"  {d}" for d in self.details)
        if self.explanation:
            lines.append(f"  likely: {self.explanation}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": type(self).__name__,
            "summary": self.summary,
            "group_kind": self.group_kind,
            "group_ranks": list(self.group_ranks),
            "ranks": list(self.ranks),
            "calls": {str(r): rec.to_dict() for r, rec in sorted(self.calls.items())},
            "details": list(self.details),
            "explanation": self.explanation,
            "report": str(self),
        }


class CollectiveMismatch(CollectiveError):
    """Members of one group entered different calls at one sequence number."""

    kind = "mismatch"


class CollectiveDeadlock(CollectiveError):
    """Blocked ranks that can never proceed."""

    kind = "deadlock"


class SchedulerStalled(RuntimeError):
    """The inproc scheduler has ranks parked in calls that no wait-for edge explains: no rank
    can run, yet none is stuck (only call sequences no real run makes lead here, such as an
    edited replay)."""


class CollectiveTimeout(CollectiveError):
    """The launch's timeout passed with ranks still running or blocked."""

    kind = "timeout"


class RankFailed(CollectiveError):
    """A rank raised, died or returned what cannot travel; carries its rank and traceback."""

    kind = "failed"

    def __init__(self, summary: str, *, rank: int = -1, traceback: str = "",
                 signal: int | None = None, exitcode: int | None = None, **kw):
        self.rank = rank
        self.traceback = traceback
        self.signal = signal
        self.exitcode = exitcode          # the process exited with it, without a result
        kw.setdefault("ranks", (rank,) if rank >= 0 else ())
        if not kw.get("explanation") and exitcode is not None and _unguarded_main():
            kw["explanation"] = SPAWN_HINT
        super().__init__(summary, **kw)

    def _state(self) -> dict[str, Any]:
        return dict(super()._state(), rank=self.rank, traceback=self.traceback, signal=self.signal,
                    exitcode=self.exitcode)

    def __str__(self) -> str:
        text = super().__str__()
        if self.traceback:
            text += "\n" + "\n".join("  | " + line for line in self.traceback.rstrip().splitlines())
        return text

    def to_dict(self) -> dict[str, Any]:
        return dict(super().to_dict(), rank=self.rank, traceback=self.traceback, signal=self.signal)


SPAWN_HINT = ("the process backends spawn one process per rank, and each re-imports the "
              "main script: it calls trtsim.launch (or run) at its top level, so every rank "
              "starts the launch again and dies while starting. Put the call under "
              "`if __name__ == \"__main__\":`")


def launches_at_top_level(source: str) -> bool:
    """Whether a script calls ``launch``/``run`` in its module body, outside an
    ``if __name__ == "__main__":`` block (what a spawned rank re-executes)."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue                # under a guard, or only defined
        for node in ast.walk(stmt):
            func = node.func if isinstance(node, ast.Call) else None
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            if name in ("launch", "run"):
                return True
    return False


def _unguarded_main() -> bool:
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if path is None:
        return False
    try:
        with open(path) as f:
            return launches_at_top_level(f.read())
    except (OSError, TypeError):
        return False


def _rebuild(cls, summary, state):
    return cls(summary, **state)
