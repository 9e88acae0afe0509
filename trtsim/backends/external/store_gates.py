"""Latent gates of a job without a launcher of trtsim's (torchrun): the ranks' gate
observations compared through the job's c10d store.

Each rank keeps its posts (``comm.gate_record.GateRecorder``) while its program runs and,
when the program returns, puts them in the store under one key of its own (compressed: one
row per guarded call). Once every rank is done (``StoreLedger.wait_all_done``), each rank
reads every rank's key and judges them on one board (``judge_rows``), as the launcher of the
process backends judges the files its ranks wrote: every rank's ``results.latent`` is the
same list. Flip is not offered here: its replays re-run the launch, and a torchrun job runs
each rank's program once.
"""

from __future__ import annotations

import pickle
import zlib

from ...comm.gate_record import judge_rows
from ...comm.latent_gate import LatentGate
from .store_ledger import StoreLedger


def _key(ledger: StoreLedger, rank: int) -> str:
    return f"{ledger.prefix}/gates/{rank}"


def publish_gates(ledger: StoreLedger, rows: list) -> None:
    """Put this rank's gate posts in the store, where every rank reads them."""
    data = zlib.compress(pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))
    ledger.store.set(_key(ledger, ledger.rank), data)


def judged_gates(ledger: StoreLedger, world: int) -> list[LatentGate]:
    """The latent gates of every rank's posts (after ``wait_all_done``: each done rank has
    put its own; a rank without a key posted none)."""
    def posted():
        for rank in range(world):
            key = _key(ledger, rank)
            if ledger.store.check([key]):
                yield rank, pickle.loads(zlib.decompress(ledger.store.get(key)))
    return judge_rows(posted())
