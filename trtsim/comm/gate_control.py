"""The outcome of rewritten gates, per rank: counted, and flipped once in a replay.

``GateControl.gate`` / ``loop`` are what ``__trtsim_gate__`` / ``__trtsim_loop__`` call in
rewritten code (``gate_rewrite``). Each counts, per rank (``current()``), the evaluations of
its gate -- for a loop, the passes of its body -- so a gate observed at a collective is named
by its evaluation, and a replay with a ``FlipAim`` flips exactly that one: an ``if``/``while``
test gives the other outcome, a loop skips that pass of its body (runs it once less). Code
that runs outside a launched rank is left alone.
"""

from __future__ import annotations

import contextlib
import sys

from .current import current
from .flip_aim import FlipAim
from .gate_import import GateImporter
from .gate_rewrite import module_of, restore, rewrite_module
from .launch_config import NOT_GATED, in_package


class GateControl:
    """The launch's rewritten gates: their sites, each rank's evaluation counts, the aim."""

    def __init__(self, aim: FlipAim | None = None):
        self.sites: list[tuple[str, int, int]] = []       # index -> (path, line, col)
        self.aim = aim
        self.flipped = False
        self._counts: dict[tuple[int, int], int] = {}     # (rank, index) -> evaluations
        self._latest: dict[tuple, int] = {}               # (rank, path, line, col) -> same

    def _count(self, index: int):
        dist = current()
        if dist is None:
            return None, 0
        rank = dist.global_rank
        n = self._counts[(rank, index)] = self._counts.get((rank, index), 0) + 1
        path, line, col = self.sites[index]
        self._latest[(rank, path, line, col)] = n
        aim = self.aim
        hit = aim is not None and aim.rank == rank and aim.evaluation == n and \
            aim.line == line and aim.col == col and aim.matches(path)
        if hit:
            self.flipped = True
        return hit, n

    def gate(self, index: int, value):
        """An ``if``/``elif``/``while``/conditional/filter test: its value, or the flip."""
        hit, _ = self._count(index)
        return (not value) if hit else value

    def loop(self, index: int, iterable):
        """A ``for`` loop's iterable, each pass counted; the aimed pass is skipped."""
        if current() is None:
            return iterable
        return self._passes(index, iterable)

    def _passes(self, index: int, iterable):
        for item in iterable:
            hit, _ = self._count(index)
            if not hit:
                yield item

    def evaluations(self, rank: int, path: str, line: int, col: int) -> int:
        """How many times ``rank`` has evaluated the gate at ``path:line:col`` so far."""
        return self._latest.get((rank, path, line, col), 0)


@contextlib.contextmanager
def installed(config, program):
    """With ``gates="flip"``: the program's module and the ``gates_in`` packages rewritten
    for the launch (restored after), those the ranks import during it through an import
    hook (``gate_import``), and their control; else None."""
    if config.gates != "flip":
        yield None
        return
    control = GateControl(config.flip)
    names = set()
    home = module_of(program)
    if home is not None:
        names.add(home)
    names.update(n for n in list(sys.modules) if in_package(n, config.gates_in))
    swapped: list = []
    importer = GateImporter(config.gates_in, control.sites, control) if config.gates_in \
        else None
    try:
        for name in sorted(names):
            module = sys.modules.get(name)
            if module is not None and name != "trtsim" and not in_package(name, NOT_GATED):
                swapped += rewrite_module(module, control.sites, control)
        if importer is not None:
            sys.meta_path.insert(0, importer)
        yield control
    finally:
        restore(swapped)
        if importer is not None:
            sys.meta_path.remove(importer)
            importer.undo()
