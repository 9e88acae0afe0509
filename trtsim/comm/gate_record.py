"""A rank's gate observations kept for the launcher, where ranks are processes.

On inproc every rank posts to one ``GateBoard``. A rank of the process backends keeps its
posts instead (``GateRecorder``: each call's group, sequence and the gates it passed, their
values as text -- the values themselves need not pickle) and writes them, when the program
returns, to the launch's gate folder; the launcher reads every rank's file and feeds one
board (``judge_recorded``), which compares the members of each call as inproc does. A rank
of a torchrun job hands its posts to the job's store instead (``backends.external.
store_gates``), and every rank judges them all (``judge_rows``).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable
from dataclasses import dataclass

from ..safe_write import write_bytes
from .gate_board import GateBoard
from .gate_seen import seen_of
from .latent_gate import LatentGate


@dataclass(frozen=True)
class PostedCall:
    """What a board reads of a call record (``post``'s ``rec``)."""

    group_kind: str
    group_ranks: tuple[int, ...]
    comm: str
    seq: int
    call_name: str


class GateRecorder:
    """One rank's posts, in call order (``GateWatch``'s board on a process backend)."""

    def __init__(self):
        self.rows: list[tuple[PostedCall, tuple, list]] = []

    def post(self, rec, rank: int, sig: tuple, raw: list) -> None:
        call = PostedCall(rec.group_kind, rec.group_ranks, rec.comm, rec.seq, rec.call_name)
        seen = [seen_of(r) for r in raw]
        self.rows.append((call, sig, [s._replace(values=(), operands=(), shown=s.text)
                                      for s in seen]))

    def save(self, folder: str, rank: int) -> None:
        """Write the posts where the launcher reads them."""
        write_bytes(os.path.join(folder, f"gates_rank{rank}.pickle"),
                    pickle.dumps(self.rows, protocol=pickle.HIGHEST_PROTOCOL))


def judge_recorded(folder: str, ranks: int) -> list[LatentGate]:
    """The latent gates of every rank's recorded posts (ranks without a file: none)."""
    def saved():
        for rank in range(ranks):
            path = os.path.join(folder, f"gates_rank{rank}.pickle")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    yield rank, pickle.load(f)
    return judge_rows(saved())


def judge_rows(by_rank: Iterable[tuple[int, list]]) -> list[LatentGate]:
    """The latent gates of ranks' recorded posts (``GateRecorder.rows``, with the rank),
    compared on one board as inproc compares them."""
    board = GateBoard()
    for rank, rows in by_rank:
        for call, sig, seen in rows:
            board.post(call, rank, sig, seen)
    return board.latent()
