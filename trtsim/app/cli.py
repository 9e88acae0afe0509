"""The ``trtsim`` command. Exit status, for every subcommand and scenario kind: 0 the run
holds, 1 an invariant is violated (the report is printed), 2 bad input (one line naming the
file, field and value; no traceback), 130 interrupted (Ctrl-C)."""

from __future__ import annotations

import argparse
import sys

from .commands import (EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_VIOLATION,
                       benchmark_list, cmd_bench, cmd_compare, cmd_explore, cmd_run,
                       cmd_scenarios, cmd_schema, cmd_topologies, parse_sets)
from ..comm.launch_config import BACKENDS
from .analyze import add_parser as _add_analyze
from .launch import add_parser as _add_launch
from .hunt import HUNTS
from .lint import add_parser as _add_lint
from .output import BadInput

__all__ = ["main", "build_parser", "parse_sets", "BadInput", "EXIT_OK", "EXIT_VIOLATION",
           "EXIT_BAD_INPUT", "EXIT_INTERRUPTED"]

_SCENARIO_HELP = "scenario YAML file, or the name of a shipped one (trtsim scenarios)"
_SET_HELP = "override a scenario key (dotted; repeatable), e.g. --set model.window=24"
_VARY = ("topology, workload.requests, seed, model.window, workload.dp_offset, "
         "transceiver.sticky_skip, deployment, workload")


def _add_run(sub) -> None:
    p = sub.add_parser("run", help="run a scenario and report its verdict")
    p.add_argument("scenario", help=_SCENARIO_HELP)
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="where the ranks of a functional scenario run: inproc (this process, "
                   "deterministic), gloo or nccl (one process per rank), torchrun (this "
                   "process is one rank of a torchrun job); default: the scenario's "
                   "backend key")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help=_SET_HELP)
    p.add_argument("--census", action="store_true",
                   help="print the collective census table (a perf scenario: the control "
                   "plane it priced)")
    p.add_argument("--json", metavar="FILE",
                   help="write the result as JSON (schema trtsim/run or trtsim/perf, "
                   "docs/JSON.md)")
    p.add_argument("--census-rows", action="store_true",
                   help="with --json: every census row (rank, iteration), not the summary")
    p.add_argument("--trace", metavar="FILE", help="write a Perfetto/Chrome trace of the run")
    p.add_argument("--gates", choices=("off", "observe", "flip"), default=None,
                   help="latent gates: observe lists each condition that decided a collective "
                   "and differs by rank while the ranks agree; flip also replays each with its "
                   "outcome flipped on one member (default: the scenario's gates key)")
    p.add_argument("--out", metavar="DIR",
                   help="with --gates flip: write each flip that gives a report here, as a "
                   "scenario that trtsim run replays (default: ~/.cache/trtsim/flips, or "
                   "$XDG_CACHE_HOME/trtsim/flips)")
    p.set_defaults(func=cmd_run)


def _add_explore(sub) -> None:
    p = sub.add_parser(
        "explore", help="search varied scenarios for the bug, shrink it and write it as a "
        "replayable scenario", description="Search variants of a scenario (inproc backend) "
        "for its bug: a variant with a report (a verdict other than ok, the verdict of "
        "correct code) or a transferred block that differs from its source. A scenario that "
        "reproduces an incident (expect: mismatch, deadlock or failed) is searched for the "
        "variants where it shows, smallest layout first; --hunt unexpected searches instead "
        "for the variants whose verdict differs from the expected one (where it does not "
        "reproduce). The first violation is shrunk to the fewest ranks, fewest and shortest "
        "requests, seed 0.")
    p.add_argument("scenario", help=_SCENARIO_HELP)
    p.add_argument("--examples", type=int, default=200, help="variants to try (default 200)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the search: the order of topologies and hypothesis's draws "
                   "(default 0)")
    p.add_argument("--vary", action="append", metavar="KEY",
                   help=f"a key to vary (repeatable; default topology): {_VARY}")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="fixed overrides")
    p.add_argument("--hunt", choices=tuple(HUNTS), default="bug",
                   help="what counts as a violation: bug (default), " + HUNTS["bug"]
                   + "; unexpected, " + HUNTS["unexpected"])
    p.add_argument("--out", metavar="DIR", help="write the counterexample scenario here")
    p.add_argument("--json", metavar="FILE",
                   help="write the result as JSON (schema trtsim/explore, docs/JSON.md)")
    p.add_argument("--flip-gates", action="store_true",
                   help="run each variant with gates: flip, and count a latent gate whose "
                   "flip gives a report as a violation (the counterexample keeps gates: flip)")
    p.set_defaults(func=cmd_explore)


class _BenchHelp(argparse.HelpFormatter):
    """Names the benchmarks (the list ``trtsim bench`` prints) only when the help is shown:
    finding the shipped folder imports the scenario package, too slow for every command."""

    def _get_help_string(self, action):
        if action.dest == "name":
            return f"the benchmark to run: {benchmark_list() or 'none ship with this install'}"
        return super()._get_help_string(action)


def _add_others(sub) -> None:
    p = sub.add_parser("compare", help="run two scenarios (or one with two override sets) and "
                       "print Before / After / Δ of every metric")
    p.add_argument("a", help="scenario (before): a file or a shipped name")
    p.add_argument("b", nargs="?", default=None, help="scenario (after); default: the same")
    p.add_argument("--set-a", action="append", metavar="KEY=VALUE", help="override of the before run")
    p.add_argument("--set-b", action="append", metavar="KEY=VALUE", help="override of the after run")
    p.add_argument("--json", metavar="FILE", help="write {before, after, delta_pct} (schema "
                   "trtsim/compare, docs/JSON.md)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("bench", help="list or run the benchmarks of docs/BENCHMARKS.md",
                       formatter_class=_BenchHelp)
    p.add_argument("name", nargs="?", help="the benchmark to run")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("topologies", help="list the topology ids of TRT-LLM's transceiver tests")
    p.set_defaults(func=cmd_topologies)
    p = sub.add_parser("scenarios", help="list the scenarios trtsim ships (run them by name)")
    p.set_defaults(func=cmd_scenarios)
    p = sub.add_parser("schema", help="print every key of both scenario kinds: type, default, "
                       "meaning")
    p.add_argument("--markdown", action="store_true", help="as docs/SCENARIOS.md")
    p.set_defaults(func=cmd_schema)


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    parser = argparse.ArgumentParser(
        prog="trtsim", description="Launch every rank of a disaggregated deployment and check "
        "that every member of a group enters the same collective, in the same order, for the "
        "same purpose.", epilog="exit status: 0 the run holds, 1 an invariant is violated, "
        "2 bad input, 130 interrupted (Ctrl-C)")
    parser.add_argument("--version", action="version", version=f"trtsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    _add_explore(sub)
    _add_analyze(sub)
    sub.choices["analyze"].add_argument(
        "--launch", metavar="ID", help="the launch whose call logs to read, where a folder "
        "holds several (default: the newest with every rank's log)")
    _add_others(sub)
    _add_launch(sub)
    _add_lint(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)          # usage errors: argparse exits 2
    try:
        return args.func(args)
    except (BadInput, ValueError) as exc:         # a ScenarioError is a ValueError
        print(f"trtsim: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("trtsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:            # `trtsim run ... | head`: the reader left
        sys.stderr.close()
        return EXIT_OK
