"""Re-issuing recorded calls on a rank: the rank program of a replay.

A replay must reproduce the report of the run it was recorded from, call sites and purposes
included, and the guard finds those by walking the real call stack (``origin``). So each
recorded call is re-issued from frames that carry its recorded stack: one small function per
recorded (file, line, function), compiled under the recorded file name so that its call sits
on the recorded line, and renamed to the recorded function. The guard then sees what it saw
in the recorded run, and nothing about origins is special-cased. Every call keeps its
recorded group sequence, so a replay that starts inside a long history numbers its calls as
the history did. A tensor payload is a stand-in with the recorded dtype and shape (no data,
no compute: the guard compares signatures), a host payload an object of the op's form.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Any, Callable

from ..calls.ops import Op, Payload
from ..calls.purpose_paths import frames_of
from ..calls.records import CallRecord

_SITE = re.compile(r"^(?P<file>.*):(?P<line>\d+) in (?P<name>.+)$")
_TENSOR = re.compile(r"^tensor\[(?P<dtype>\w+), \((?P<shape>[\d, ]*)\)\]$")


@dataclass(frozen=True)
class RankScript:
    """What one rank of a replay does: its recorded calls in order, then how it ends:
    ``done`` (it returns), ``failed`` (it raises ``failure``, ``Type: message``), or
    ``blocked`` (its last call never returns). ``turns``: (index of a call, its turn) for
    calls whose members must enter in the recorded order -- a mismatch is reported when the
    first divergent member enters, with the records entered until then -- so a call waits
    until every earlier turn at its group sequence has been entered."""

    calls: tuple[CallRecord, ...]
    end: str = "done"
    failure: str = ""
    turns: tuple[tuple[int, int], ...] = ()


class Shaped:
    """A recorded tensor: its dtype and shape, which is all its signature says
    (``records.signature_of``). Reductions of stand-ins give a stand-in."""

    __slots__ = ("dtype", "shape", "device")

    def __init__(self, dtype: str, shape: tuple[int, ...]):
        self.dtype, self.shape, self.device = dtype, shape, "replay"

    def __add__(self, other: "Shaped") -> "Shaped":
        return self

    __mul__ = __and__ = __or__ = __xor__ = __add__

    def __lt__(self, other: "Shaped") -> bool:
        return False

    __gt__ = __lt__

    def __reduce__(self):
        return (Shaped, (self.dtype, self.shape))


def payload_of(rec: CallRecord) -> Any:
    """A payload with ``rec``'s signature that the inproc backend can compute with: a
    ``Shaped`` for ``tensor[dtype, (shape)]``, else a host object of the op's form."""
    match = _TENSOR.match(rec.signature)
    if match is not None:
        shape = tuple(int(x) for x in match["shape"].replace(" ", "").split(",") if x)
        return Shaped(match["dtype"], shape)
    n = len(rec.group_ranks)
    op = Op.of(rec.op)
    if op.payload is Payload.EACH_LIST:
        return [0] * n
    if op.reduces:
        return 0
    if op.payload is Payload.ROOT_LIST:
        return [None] * n if rec.root is not None and rec.group_ranks[rec.root] == rec.rank \
            else None
    return None


def _stack_of(rec: CallRecord) -> list[tuple[str, int, str, str]]:
    """(file, line, qualified name, name) frames of a record, outermost first: the call
    site's frame from ``callsite``, the outer ones' names from ``purpose`` (their files and
    lines play no part in a purpose key)."""
    names = frames_of(rec.purpose)
    site = _SITE.match(rec.callsite)
    if site is None or not names:
        return []
    file, line = site["file"], int(site["line"])
    outer = [(file, 1, q, q.rsplit(".", 1)[-1]) for q in reversed(names[1:])]
    return outer + [(file, line, names[0], site["name"])]


class FrameMaker:
    """Functions that call on, from a given file, line and name (made once each)."""

    def __init__(self):
        self._made: dict[tuple, Callable] = {}

    def frame(self, file: str, line: int, qualname: str, name: str) -> Callable:
        """A function ``f(go)`` whose frame sits at ``file:line`` in ``name`` and calls go."""
        key = (file, line, qualname, name)
        fn = self._made.get(key)
        if fn is None:
            # the call sits on the recorded line by moving the code's first line there, not
            # by padding the source with that many newlines (a recorded 10**8 would cost as
            # many bytes)
            line = min(max(int(line), 1), 2 ** 31 - 2)
            scope: dict = {"__name__": "trtsim.replayed"}
            exec(compile("def _f(_go):\n    return _go()\n", file, "exec"), scope)  # noqa: S102
            code = scope["_f"].__code__.replace(co_name=name, co_qualname=qualname,
                                                co_firstlineno=line - 1)
            fn = self._made[key] = types.FunctionType(code, scope)
        return fn

    def call_from(self, stack: list[tuple[str, int, str, str]], go: Callable) -> Any:
        """``go()`` called from inside ``stack`` (outermost first)."""
        for frame in reversed(stack):
            go = (lambda f, g: lambda: f(g))(self.frame(*frame), go)
        return go()


def _issue(dist, rec: CallRecord) -> Any:
    payload = payload_of(rec)
    dist.resume_at(rec)                                # the recorded sequence, not ours
    if rec.is_p2p:
        return dist.issue_p2p(rec.op, payload, rec.peer, rec.tag, rec.label,
                              blocking=Op.of(rec.op).blocking, global_peer=True, api=rec.api)
    return dist.issue_collective(rec.group_kind, rec.op, payload, rec.label, rec.root,
                                 rec.reduce_op, group=rec.group_ranks, comm=rec.comm,
                                 api=rec.api)


class ReplayFailure(Exception):
    """Raised by a replayed rank whose recorded run failed (the recorded type's name is
    shown by a subclass made for it)."""


def _wait_turn(dist, rec: CallRecord, turn: int, entered: dict) -> None:
    """Let other ranks move until every earlier turn of ``rec``'s sequence has entered (a
    bounded wait: a turn that never comes does not hang the replay)."""
    key = (rec.group_key, rec.seq)
    for _ in range(100_000):
        if entered.get(key, 0) >= turn:
            break
        dist.pause(0.001)                   # the inproc backend: one scheduling step aside
    entered[key] = max(entered.get(key, 0), turn + 1)


def replay_program(dist, scripts: tuple[RankScript, ...], entered: dict | None = None) -> None:
    """The rank program of a replay: issue this rank's recorded calls, each from its
    recorded stack, at its recorded iteration and turn, then end as the recorded rank
    ended. ``entered`` is shared by the ranks of one run (the inproc backend's)."""
    script = scripts[dist.global_rank]
    frames = FrameMaker()
    turns = dict(script.turns)
    entered = {} if entered is None else entered
    for i, rec in enumerate(script.calls):
        if rec.iteration != dist.iteration:
            dist.set_iteration(rec.iteration)
        if i in turns:
            _wait_turn(dist, rec, turns[i], entered)
        frames.call_from(_stack_of(rec), lambda rec=rec: _issue(dist, rec))
    if script.end == "failed":
        kind, _, message = script.failure.partition(": ")
        raise type(kind or "Failure", (ReplayFailure,), {})(message)
