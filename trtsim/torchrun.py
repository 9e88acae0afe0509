"""``torchrun --nproc-per-node N -m trtsim.torchrun [options] script.py [args...]``: an
unmodified torchrun script, every rank guarded (the twin of ``python -m trtsim.mpi``).

Each torchrun worker runs the script as torchrun would have run it (``jobs.script_job``),
with its torch.distributed calls guarded through the rendezvous store
(``backends.external.torchrun``) and, with ``--call-log-dir``, its call log written for
``trtsim analyze``. A report -- or the script's failure on a rank, as a ``RankFailed`` report
with its traceback -- ends the job once: rank 0 prints it and leaves last with status 1,
every other rank leaves first with status 0 and prints nothing, so torchrun's summary names
one failed rank (``backends.external.job_ending``). Exit status: 0 the job ran, 1 a report,
2 bad input (one line; no traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from .backends.external.job_flags import add_job_flags, tp_of

TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
BAD_INPUT_WAIT_S = 30.0    # how long a rank waits for the first to print a bad input's line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        _bad_input(message)


def _bad_input(message: str):
    """One line from the first rank (every rank got the same arguments), status 2."""
    first = os.environ.get("RANK", "0") == "0"
    if first:
        print(f"trtsim.torchrun: {message}", file=sys.stderr, flush=True)
    _after_the_first_rank(first)
    sys.exit(2)


def _after_the_first_rank(first: bool) -> None:
    """The other ranks leave only once the first has printed, as torchrun's agent store says:
    the agent ends every worker as soon as one has failed, and on a busy machine it would end
    the first before its line. Without the agent's store (another env:// launcher) a rank
    leaves at once; with it, after ``BAD_INPUT_WAIT_S`` at most."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        return
    from datetime import timedelta

    import torch.distributed as tdist
    key = f"trtsim.torchrun/bad_input/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    try:
        store = tdist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                               is_master=False, timeout=timedelta(seconds=BAD_INPUT_WAIT_S))
        if first:
            store.set(key, "printed")
        else:
            store.wait([key])
    except (KeyError, ValueError, RuntimeError):
        pass                                     # leaving anyway: the line is the first's


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="torchrun ... -m trtsim.torchrun", description=__doc__.split("\n\n")[0])
    add_job_flags(p, "torchrun")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo",
                   help="the process groups trtsim makes (default gloo; nccl: GPUs)")
    p.add_argument("--intercept", default="torch", metavar="torch,mpi",
                   help="the APIs guarded (default torch)")
    p.add_argument("--call-log-dir", default=None, metavar="DIR",
                   help="every rank writes its call log here, for trtsim analyze")
    p.add_argument("-m", "--module", action="store_true",
                   help="the script is a module name, run as python -m would")
    p.add_argument("script", help="the torchrun script (or, with -m, the module)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    missing = [k for k in TORCHRUN_VARS if k not in os.environ]
    if missing:
        _bad_input(f"{', '.join(missing)} not set: run it under torchrun "
                   "(torchrun --nproc-per-node N -m trtsim.torchrun script.py)")
    from .comm.launch_config import LaunchConfig
    from .jobs.script_job import ScriptTarget
    from .jobs.script_launch import run_torchrun_rank
    from .launching import default_clock_model, instances_of
    world = int(os.environ["WORLD_SIZE"])
    try:
        intercept = tuple(n.strip() for n in args.intercept.split(",") if n.strip())
        config = LaunchConfig(args.backend, args.guard, 0, args.timeout,
                              clock_model=default_clock_model(), wrappers=("runpy",),
                              intercept=intercept, log_dir=args.call_log_dir,
                              gates=args.gates)
        target = ScriptTarget(None if args.module else args.script,
                              args.script if args.module else None, tuple(args.args))
        tp = tp_of(args, world)
        instances = instances_of(None, tp, args.pp, args.cp, args.attention_dp)
        if tp * args.pp * args.cp != world:
            raise ValueError(f"--tp {tp} x --pp {args.pp} x --cp {args.cp} lays out "
                             f"{tp * args.pp * args.cp} ranks but torchrun started {world}")
    except ValueError as exc:
        _bad_input(str(exc))
    try:
        outcome = run_torchrun_rank(target, instances, config)
    except Exception as exc:  # noqa: BLE001 - the script's failure: its traceback, status 1
        traceback.print_exception(exc)
        return 1
    if os.environ["RANK"] == "0":                    # every rank has them: one prints
        for gate in outcome.latent:
            print(gate.line(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
