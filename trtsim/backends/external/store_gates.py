"""Latent gates of a job without a launcher of trtsim's (torchrun, mpirun): the ranks' gate
observations compared through the job's c10d store.

Each rank keeps its posts (``comm.gate_record.GateRecorder``) while its program runs and,
when the program returns, puts them in the store under one key of its own (compressed: one
row per guarded call). Once every rank is done (``StoreLedger.wait_all_done``), each rank
reads every rank's key and judges them on one board (``judge_rows``), as the launcher of the
process backends judges the files its ranks wrote: every rank's ``results.latent`` is the
same list (an mpirun job's rank 0 alone judges: it serves the store and prints the gates,
and the other ranks leave without waiting for each other). Flip is not offered here: its
replays re-run the launch, and such a job runs each rank's program once (``add_gates_flag``:
the faces' flag, one for both).
"""

from __future__ import annotations

import argparse
import pickle
import zlib

from ...comm.gate_record import judge_rows
from ...comm.latent_gate import LatentGate
from ...comm.launch_config import flip_refused
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


JOB_GATES = ("off", "observe")                 # what a job run once can do with its gates


def job_flip_refused(launcher: str) -> str:
    """Why a job ``launcher`` starts has no flip, with what its face has instead."""
    return flip_refused(f"a job {launcher} starts", "--gates observe")


def add_gates_flag(parser: argparse.ArgumentParser, launcher: str) -> None:
    """``--gates off|observe`` on the face of a job ``launcher`` starts (torchrun, mpirun):
    rank 0 prints each latent gate after the script. ``flip`` is refused with its reason, in
    argparse's one line (the face's status 2)."""
    def mode(value: str) -> str:
        if value == "flip":
            raise argparse.ArgumentTypeError(f"'flip': {job_flip_refused(launcher)}")
        if value not in JOB_GATES:
            raise argparse.ArgumentTypeError(
                f"invalid choice: {value!r} (choose from {', '.join(map(repr, JOB_GATES))})")
        return value
    parser.add_argument("--gates", type=mode, default="off", metavar="{off,observe}",
                        help="observe: rank 0 prints each latent gate after the script "
                             "(default off)")
