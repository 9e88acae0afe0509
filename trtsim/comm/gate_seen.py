"""One gate as one rank passed it on its way to a call (what the board compares, and what a
latent gate is made of)."""

from __future__ import annotations

from typing import NamedTuple

from .gate_values import text_of


class Seen(NamedTuple):
    """One gate as one rank passed it: the outcome that let it reach the call, the operands'
    comparison key and values (their text is made only for a latent gate), and the
    iteration it counts as. A named tuple: one is made per gate per call."""

    site: str
    condition: str
    outcome: bool
    key: tuple
    values: tuple
    operands: tuple                 # the gate's Operand objects, in source order
    iteration: int
    evaluation: int                 # the rank's n-th pass of this gate (1-based)
    path: str                       # the gate's file, in full
    shown: str = ""                 # the text, where values and operands were left behind
    parts: tuple = ()               # an or/and test: (kind, (truth, key) per part)
    col: int = 0                    # the test's column (two gates may share a line)

    @property
    def text(self) -> str:
        """The operands' values as LatentGate.values shows them."""
        if self.shown:
            return self.shown
        return ", ".join(f"{op.text}={text_of(v)}" for op, v in zip(self.operands, self.values))


def seen_of(raw: tuple) -> Seen:
    """The ``Seen`` of one gate a rank passed (``observe``'s ``raw`` entry)."""
    entry, key, values, iteration, evaluation, parts = raw
    gate, outcome, _, ident = entry[:4]         # gate_watch._entry's layout
    return Seen(ident[0], gate.condition, outcome, key, values, entry[6], iteration,
                evaluation, gate.path, "", parts, gate.col)
