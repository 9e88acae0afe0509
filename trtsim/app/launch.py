"""``trtsim launch --nproc-per-node N [--tp T --pp P --cp C] [--backend B] script.py [args]``
(or ``-m module``): torchrun's command line with trtsim in front, for an unmodified script.

Every rank runs the script as torchrun's worker would (``jobs.script_job``), with its
torch.distributed calls guarded. torchrun's flags keep torchrun's names and meanings; those
trtsim does not do are refused (exit status 2) rather than ignored. trtsim's own flags use
names torchrun does not have. Exit status: 0 the job ran with no report, 1 a report (printed
once, to stderr), 2 bad input (one line), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys

from .output import BadInput

EXIT_OK, EXIT_REPORT = 0, 1
BACKENDS = ("inproc", "gloo", "nccl")
INTERCEPTS = ("torch", "mpi")

# torchrun's flags that trtsim launch does not do: name -> why (the refusal's line)
REFUSED = {
    "max_restarts": "restarts are torchrun's elastic agent's; a report ends the job",
    "rdzv_backend": "one node's ranks rendezvous in trtsim's own store",
    "rdzv_endpoint": "one node's ranks rendezvous in trtsim's own store",
    "rdzv_id": "one node's ranks rendezvous in trtsim's own store",
    "rdzv_conf": "one node's ranks rendezvous in trtsim's own store",
    "node_rank": "trtsim launch runs one node",
    "no_python": "the script is run by this Python, on every rank",
    "run_path": "the script is always run as a file (or -m module)",
    "monitor_interval": "trtsim's monitor watches the ranks",
    "start_method": "the backend decides how ranks start",
    "local_addr": "one node's ranks rendezvous in trtsim's own store",
    "role": "every rank runs the one script",
    "event_log_handler": "the elastic agent's events are torchrun's",
    "duplicate_stdout_filters": "the workers' logs are not filtered into other files",
    "duplicate_stderr_filters": "the workers' logs are not filtered into other files",
    "logs_specs": "the workers' logs are laid out as torchrun's default LogsSpecs does",
    "numa_binding": "ranks are not bound to NUMA nodes",
    "signals_to_handle": "trtsim launch handles Ctrl-C itself (status 130)",
    "shutdown_timeout": "a report ends the ranks at once",
    "virtual_local_rank": "LOCAL_RANK is the rank on its node",
}


def _torchrun_flag(p, name: str, help_text: str, **kw) -> None:
    """A torchrun flag under both of torchrun's spellings (``--a-b`` and ``--a_b``)."""
    dashed = "--" + name.replace("_", "-")
    names = [dashed] + (["--" + name] if "_" in name else [])
    p.add_argument(*names, dest=name, help=help_text, **kw)


def add_parser(sub) -> None:
    """The ``launch`` subcommand's arguments."""
    p = sub.add_parser(
        "launch", help="run an unmodified torchrun script (or -m module) on every rank, "
        "guarded: torchrun's command line with trtsim in front",
        description="Run a torchrun script as torchrun would (__name__ == '__main__', "
        "sys.argv, RANK/LOCAL_RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT per rank; its "
        "init_process_group joins trtsim's world), every collective guarded. torchrun's "
        "flags keep their meanings; those trtsim does not do are refused (exit 2).",
        epilog="torchrun's flags refused: " + ", ".join(
            "--" + n.replace("_", "-") for n in REFUSED) + ". exit status: 0 no report, "
        "1 a report (printed once), 2 bad input, 130 interrupted")
    _torchrun_flag(p, "nproc_per_node", "ranks on this node (torchrun's)", type=int,
                   required=True, metavar="N")
    _torchrun_flag(p, "nnodes", "nodes (torchrun's; 1: trtsim launch runs one node)",
                   type=int, default=1)
    p.add_argument("--standalone", action="store_true",
                   help="torchrun's single-node rendezvous (what trtsim launch always does)")
    _torchrun_flag(p, "master_addr", "torchrun's: MASTER_ADDR the ranks see "
                   "(default 127.0.0.1)", default=None)
    _torchrun_flag(p, "master_port", "torchrun's: MASTER_PORT the ranks see (default: a "
                   "free port)", type=int, default=None)
    p.add_argument("-m", "--module", action="store_true",
                   help="torchrun's: the script is a module name, run as python -m would")
    for name in REFUSED:
        _torchrun_flag(p, name, argparse.SUPPRESS, default=None)
    _add_stream_flags(p)
    own = p.add_argument_group("trtsim's own")
    own.add_argument("--tp", type=int, default=0, help="TP size of the layout (default: the "
                     "world over pp x cp)")
    own.add_argument("--pp", type=int, default=0, help="PP size (default 1)")
    own.add_argument("--cp", type=int, default=0, help="CP size (default 1)")
    own.add_argument("--attention-dp", action="store_true", help="the layout's attention DP")
    own.add_argument("--deployment", metavar="ID", default=None,
                     help="a topology id (trtsim topologies): its ctx then gen ranks")
    own.add_argument("--backend", choices=BACKENDS, default="inproc",
                     help="inproc (every rank in this process, deterministic; default), gloo "
                     "or nccl (a process per rank)")
    own.add_argument("--intercept", default="torch", metavar="torch,mpi",
                     help="the APIs guarded in the ranks (default torch)")
    own.add_argument("--rank-local", action="append", default=[], metavar="PKG",
                     help="inproc: that package's globals are each rank's own (repeatable)")
    own.add_argument("--call-log-dir", metavar="DIR", default=None,
                     help="gloo/nccl: every rank writes its call log here, for trtsim analyze")
    own.add_argument("--timeout", type=float, default=300.0,
                     help="seconds before the job is reported as hung (default 300)")
    own.add_argument("--seed", type=int, default=0, help="inproc: the schedule's seed")
    p.add_argument("training_script", metavar="script.py",
                   help="the script (or, with -m, the module)")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER, metavar="args",
                   help="the script's arguments")
    p.set_defaults(func=cmd_launch)


def _add_stream_flags(p) -> None:
    """torchrun's flags for the workers' stdout and stderr (``jobs.worker_logs``)."""
    _torchrun_flag(p, "log_dir", "torchrun's: base folder of the workers' logs; each launch "
                   "writes in DIR/<run id>_<random>/attempt_0/<local rank>/{stdout,stderr}.log "
                   "(default: a temporary folder, when --redirects or --tee asks for files)",
                   default=None, metavar="DIR")
    p.add_argument("-r", "--redirects", default="0", metavar="MODE",
                   help="torchrun's: the workers' streams to their log files instead of the "
                   "console: 0 none, 1 stdout, 2 stderr, 3 both, or per local rank (0:1,1:2). "
                   "inproc: what a rank writes through sys.stdout/sys.stderr")
    p.add_argument("-t", "--tee", default="0", metavar="MODE",
                   help="torchrun's: the workers' streams to their log files and to the "
                   "console, each line after [default<local rank>]: (values as --redirects)")
    _torchrun_flag(p, "local_ranks_filter", "torchrun's: only these local ranks' streams "
                   "reach the console (e.g. 0,1); their log files are written all the same",
                   default="", metavar="RANKS")


def _intercepts(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in INTERCEPTS]
    if not names or bad:
        raise BadInput(f"--intercept {text!r}: a comma-separated list of {', '.join(INTERCEPTS)}")
    return names


def script_launch(args):
    """The ``ScriptLaunch`` the arguments ask for (BadInput / ValueError: exit 2)."""
    from ..jobs.script_job import ScriptTarget
    from ..jobs.script_launch import ScriptLaunch
    for name, why in REFUSED.items():
        if getattr(args, name) is not None:
            raise BadInput(f"--{name.replace('_', '-')}: not supported by trtsim launch ({why})")
    target = ScriptTarget(None if args.module else args.training_script,
                          args.training_script if args.module else None,
                          tuple(args.training_script_args))
    return ScriptLaunch(target, args.nproc_per_node, args.nnodes, args.tp, args.pp, args.cp,
                        args.attention_dp, args.deployment, args.backend,
                        _intercepts(args.intercept), tuple(args.rank_local),
                        args.call_log_dir, args.timeout, args.seed,
                        master_addr=args.master_addr, master_port=args.master_port,
                        log_dir=args.log_dir, redirects=args.redirects, tee=args.tee,
                        local_ranks_filter=args.local_ranks_filter)


def cmd_launch(args) -> int:
    """Run the script on every rank; print the report once (stderr) and the notes."""
    from ..jobs.script_launch import run_script
    from .interrupt import InterruptLatch
    launch = script_launch(args)
    launch.instances()                          # a layout that is not the world: exit 2 now
    logs = launch.worker_logs()
    if logs is not None and logs.attempt_dir is not None:
        print(f"trtsim launch: the workers' logs: {logs.attempt_dir}/<local rank>/",
              file=sys.stderr, flush=True)
    with InterruptLatch():
        outcome = run_script(launch, logs=logs)
    sys.stdout.flush()
    for note in outcome.notes:
        if note.startswith("the script asked for"):
            print(f"trtsim launch: note: {note}", file=sys.stderr)
    if outcome.error is not None:
        print(str(outcome.error), file=sys.stderr, flush=True)
        return EXIT_REPORT
    print(f"trtsim launch: {launch.world} ranks ({launch.layout_name()}) on {launch.backend}: "
          f"{launch.target.name} ran with no report", file=sys.stderr)
    return EXIT_OK
