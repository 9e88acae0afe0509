"""The gates one rank passed on its way to a collective, read from its frames at the call.

Each collective's record reaches the rank's ``GateWatch`` through its transport (wrapped in a
``GatedTransport`` only when a launch asked for gates: with ``gates="off"`` a call's path has
nothing of gates). The watch walks the
frames between the rank program's entry and the call -- the program's own, not trtsim's
plumbing (``origin._LAYER_PARTS``), torch's, the standard library's or a declared wrapper's
-- and for each frame takes the gates (``trtsim.gates``) that govern the line it is at, with
the outcome that let it run there, and the values of their operands read in the frame. A
gate suppressed in the source (``# trtsim: uniform(tp) -- reason``) for the call's group is
left out. The group's comparison is the launch's ``GateBoard``.

Values are read at the call, not at the test: a name rebound between the two reads its new
value. Reading one runs no code of the program's but a property's, where an operand is one.
"""

from __future__ import annotations

import functools
import os
from sys import _getframe
from types import FrameType

from ..gates import Gate, gates_at
from .gate_reader import reader_of
from .gate_transport import GatedTransport
from .gate_values import bool_parts, eq_pairs, meanings, truth_of
from .origin import _ENTRY, _LAUNCH_FILE, _LAYER_PARTS, _THROUGH, _short_path

_STDLIB = os.path.dirname(os.__file__)
_SKIPPED_PARTS = _LAYER_PARTS + ("/torch/", "/trtsim/gates/")


class GateWatch:
    """One rank's gate observer. A gate's evaluation is counted by the rewritten code of a
    flip launch (``GateControl``), else as the passes seen here (a gate governing two calls
    of one evaluation counts twice: an iteration set by the program or a marker wins)."""

    def __init__(self, rank: int, board, wrappers: tuple[str, ...] = (), control=None):
        self.rank, self.board, self.wrappers, self.control = rank, board, wrappers, control
        # id(code) -> (code, {lasti: entries}, or None for a frame not the program's)
        self._codes: dict[int, tuple] = {}
        self._passes: dict[tuple, int] = {}      # gate identity -> passes seen (no control)
        self._marked = False                     # an iteration was set: use it

    def on_iteration(self) -> None:
        """The rank set an iteration (``set_iteration`` or a marker): gates count by it from
        now on, iteration 0 included."""
        self._marked = True

    def observe(self, rec, depth: int = 1) -> None:
        """Read the gates governing the call ``depth`` frames above this one, post them:
        the signature the members compare (gate, outcome, key), and per gate what a latent
        one is made of (``Seen``, made by the board only when the signatures differ).
        Every guarded call of a launch with gates runs this: one dict lookup per frame, one
        generated reader per gate (``gate_reader``), nothing made twice."""
        frame: FrameType | None = _getframe(depth + 1)
        sig: list = []
        raw: list = []
        codes, control, marked = self._codes, self.control, self._marked
        while frame is not None:
            code = frame.f_code
            if code is _ENTRY:
                break
            known = codes.get(id(code))
            if known is None or known[0] is not code:
                known = codes[id(code)] = (code, None if self._skipped(frame) else {})
            back = frame.f_back
            by_instruction = known[1]
            if by_instruction is None:          # trtsim's, torch's or a wrapper's frame
                frame = back
                continue
            lasti = frame.f_lasti
            found = by_instruction.get(lasti)
            if found is None:
                found = by_instruction[lasti] = _entries(code, code.co_filename, lasti,
                                                         frame.f_lineno)
            if found and (back is None or back.f_code is not _THROUGH):
                local, glob = frame.f_locals, frame.f_globals
                for entry in found:
                    gate, outcome, suppression, ident, read, parts, _ = entry
                    if suppression is not None and suppression.covers(rec.group_kind):
                        continue
                    values, key = read(glob, local)
                    if control is not None:
                        evaluation = self._evaluation(gate, ident)
                    elif marked:
                        evaluation = 0           # counted only where no iteration is set
                    else:
                        evaluation = self._passes[ident] = self._passes.get(ident, 0) + 1
                    sig.append((ident, outcome, key))
                    raw.append((entry, key, values, rec.iteration if marked else evaluation,
                                evaluation, _parts(parts, key, glob, local) if parts else ()))
            frame = back
        self.board.post(rec, self.rank, tuple(sig), raw)

    def _skipped(self, frame) -> bool:
        name = frame.f_code.co_filename
        path = name.replace("\\", "/")
        module = frame.f_globals.get("__name__", "")
        return (name == _LAUNCH_FILE or name.startswith(_STDLIB) and "site-packages" not in path
                or any(part in path for part in _SKIPPED_PARTS)
                or any(module == w or module.startswith(w + ".") for w in self.wrappers))

    def _evaluation(self, gate: Gate, ident: tuple) -> int:
        """The control's count of the gate's evaluations on this rank; passes seen here for
        a gate outside the rewritten modules (torch's, a package not in ``gates_in``)."""
        if self.control is not None:
            n = self.control.evaluations(self.rank, gate.path, gate.line, gate.col)
            if n:
                return n
        n = self._passes[ident] = self._passes.get(ident, 0) + 1
        return n


@functools.lru_cache(maxsize=16384)
def _entries(code, filename: str, lasti: int, line: int) -> tuple:
    """The entries of the gates governing instruction ``lasti`` of ``code`` (at ``line``;
    its column from the code's positions, for gates that share a line). ``filename`` is
    part of the key: equal code objects of two files compare equal."""
    col = None
    positions = list(code.co_positions())
    if 0 <= lasti // 2 < len(positions):
        pos = positions[lasti // 2]
        if pos[0] == line and pos[2] is not None:
            col = pos[2]
    # An assertion decides whether the rank crashes, not which collective it enters: a
    # failed one is a RankFailed on every backend already, and one that holds with differing
    # operands (``assert local_rank >= 0``) is no hang in waiting. The lint reads them.
    return tuple(_entry(g, line, col) for g in gates_at(code, line, col) if g.kind != "assert")


def _entry(gate: Gate, line: int, col: int | None) -> tuple:
    """What a call at (line, col) reads of one gate, made once per instruction: the gate,
    the outcome that lets it run, its suppression, its identity (site, condition, column:
    two gates may share a line), the reader of its operands' values and key
    (``gate_reader``), the or/and parts, and the operands in source order (``seen_of``)."""
    operands, means = _in_source_order(gate)
    ident = (f"{_short_path(gate.path)}:{gate.line}", gate.condition, gate.col)
    return (gate, bool(gate.outcome_at(line, col)), gate.suppression, ident,
            reader_of(operands, means, eq_pairs(gate, operands)),
            bool_parts(gate, operands), operands)


def _in_source_order(gate: Gate) -> tuple[tuple, tuple]:
    """The gate's operands as the condition reads, left to right, with their meanings."""
    pairs = sorted(zip(gate.operands, meanings(gate)),
                   key=lambda p: (p[0].expr.lineno, p[0].expr.col_offset))
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def _parts(parts: tuple, key: tuple, globals_: dict, locals_: dict) -> tuple:
    """(kind, (truth, key of its operands) per part) of an or/and test, read in the frame."""
    kind, pieces = parts
    out = [kind]
    for code, inside in pieces:
        truth = None
        if code is not None:
            try:
                truth = truth_of(eval(code, globals_, locals_))
            except Exception:                           # noqa: BLE001 -- unbound, raising
                truth = None
        out.append((truth, tuple(key[i] for i in inside)))
    return tuple(out)


def watch_gates(dists: list, config, control=None, board=None):
    """Give each rank's communicator its watch when the launch asked for gates; the board
    they share (None with ``gates="off"``, and in a flip's replay, which only flips).
    ``board``: where the posts go (a process rank's ``GateRecorder``); default a new
    ``GateBoard``."""
    if config.gates == "off" or config.flip is not None:
        return None
    if board is None:
        from .gate_board import GateBoard, ThreadedGateBoard
        board = ThreadedGateBoard() if "torch" in config.intercept else GateBoard()
    for d in dists:
        watch = GateWatch(d.global_rank, board, config.wrappers, control)
        d.wrap_transport(lambda transport, w=watch: GatedTransport(transport, w))
    return board
