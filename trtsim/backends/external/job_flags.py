"""The flags both faces of a job started by another launcher share (``python -m trtsim.mpi``
under mpirun, ``-m trtsim.torchrun`` under torchrun): the layout, the guard, the time limit
and the gates, with one meaning on both."""

from __future__ import annotations

import argparse

from ...guard.policy import GUARDS
from .store_gates import add_gates_flag


def add_job_flags(parser: argparse.ArgumentParser, launcher: str) -> None:
    """``--tp --pp --cp --attention-dp --guard --timeout --gates`` on the face of a job that
    ``launcher`` starts."""
    parser.add_argument("--tp", type=int, default=0, help="TP size of the layout (default: "
                        f"the ranks {launcher} started, over pp x cp)")
    parser.add_argument("--pp", type=int, default=1, help="PP size (default 1)")
    parser.add_argument("--cp", type=int, default=1, help="CP size (default 1)")
    parser.add_argument("--attention-dp", action="store_true",
                        help="the layout's attention DP")
    parser.add_argument("--guard", choices=GUARDS, default="strict",
                        help="guard mode (default strict)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds before a rank's wait is reported as hung (default 300)")
    add_gates_flag(parser, launcher)


def tp_of(args: argparse.Namespace, world: int) -> int:
    """``--tp``, or the ranks the launcher started over pp x cp."""
    return args.tp or max(1, world // max(1, args.pp * args.cp))
