"""The ``trtsim`` command. Exit status: 0 the run holds, 1 an invariant is violated (the
report is printed), 2 bad input (one line naming the file, field and value)."""

from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Input the command cannot use; its message is the one line printed."""


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict:
    """``key=value`` pairs into a dict of dotted keys and YAML-read values."""
    from ..scenario.functional import parse_value
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"{flag} {item!r}: expected key=value (e.g. transceiver.sticky_skip=guarded)")
        out[key.strip()] = parse_value(value)
    return out


def _progress(line: str) -> None:
    print(f"  ... {line}", file=sys.stderr, flush=True)


def _write_json(path: str, data) -> None:
    """Write JSON atomically: a reader never sees half a file."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(data, f, indent=2, default=str)
        os.replace(tmp, path)
    except OSError as exc:
        raise BadInput(f"--json {path}: cannot write ({exc.strerror})") from None


def _cmd_topologies(args) -> int:
    from ..layout.topology import format_table
    print(format_table())
    return EXIT_OK


def _single_threaded_torch() -> None:
    """The simulator's tensors are small and the inproc ranks share one thread: torch's
    intra-op pool only adds OpenMP spinning (an order of magnitude on a busy machine)."""
    import torch
    torch.set_num_threads(1)


def _cmd_run(args) -> int:
    from ..jobs.dispatch import run_any
    from ..timeline.trace import write_trace
    _single_threaded_torch()
    overrides = parse_sets(args.set)
    if args.backend:
        overrides["backend"] = args.backend
    result = run_any(args.scenario, overrides, progress=_progress)
    print(result.summary())
    if args.census and result.census is not None:
        print()
        print(result.census.table())
    if args.json:
        _write_json(args.json, result.to_dict())
    if args.trace:
        try:
            write_trace(args.trace, result.trace_events())
        except OSError as exc:
            raise BadInput(f"--trace {args.trace}: cannot write ({exc.strerror})") from None
    return EXIT_OK if result.holds else EXIT_VIOLATION


def _cmd_compare(args) -> int:
    from .compare import compare
    _single_threaded_torch()
    if args.b is None and not (args.set_a or args.set_b):
        raise BadInput("compare: give two scenarios, or one with --set-a/--set-b overrides")
    result = compare(args.a, args.b, parse_sets(args.set_a, "--set-a"),
                     parse_sets(args.set_b, "--set-b"), progress=_progress)
    print(result.table())
    if args.json:
        _write_json(args.json, result.to_dict())
    return EXIT_OK


def _cmd_explore(args) -> int:
    from .explore import explore
    _single_threaded_torch()
    result = explore(args.scenario, examples=args.examples, seed=args.seed,
                     vary=tuple(args.vary or ("topology",)), overrides=parse_sets(args.set),
                     out_dir=args.out, progress=_progress)
    print(result.summary())
    return EXIT_VIOLATION if result.found else EXIT_OK


def _benchmarks_dir() -> str:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root in (os.getcwd(), here):
        path = os.path.join(root, "benchmarks")
        if os.path.isdir(path):
            return path
    raise BadInput("bench: no benchmarks/ folder here or beside the package (run it from a "
                   "checkout of trtsim)")


def _cmd_bench(args) -> int:
    import subprocess
    root = _benchmarks_dir()
    known = sorted(f[len("bench_"):-3] for f in os.listdir(root)
                   if f.startswith("bench_") and f.endswith(".py"))
    if not args.name:
        print("benchmarks: " + ", ".join(known))
        print("run one: trtsim bench NAME [-- its options]; figures: docs/BENCHMARKS.md")
        return EXIT_OK
    if args.name not in known:
        raise BadInput(f"bench: {args.name!r} is not one of {', '.join(known)}")
    script = os.path.join(root, f"bench_{args.name}.py")
    extra = [a for a in args.rest if a != "--"]
    return subprocess.call([sys.executable, script, *extra])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trtsim", description="Launch every rank of a disaggregated deployment and check "
        "that every member of a group enters the same collective, in the same order, for the "
        "same purpose.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("topologies", help="list the topology ids of TRT-LLM's transceiver tests")
    p.set_defaults(func=_cmd_topologies)

    p = sub.add_parser("run", help="run a scenario and report its verdict")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--backend", choices=("inproc", "gloo", "nccl"), default=None)
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a scenario key (dotted), e.g. --set model.window=24")
    p.add_argument("--census", action="store_true", help="print the collective census table")
    p.add_argument("--json", metavar="FILE", help="write the full result as JSON")
    p.add_argument("--trace", metavar="FILE", help="write a Perfetto/Chrome trace of the run")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("compare", help="run two scenarios (or one with two override sets) and "
                       "print Before / After / Δ of every metric")
    p.add_argument("a", help="scenario (before)")
    p.add_argument("b", nargs="?", default=None, help="scenario (after); default: the same")
    p.add_argument("--set-a", action="append", metavar="KEY=VALUE", help="override of the before run")
    p.add_argument("--set-b", action="append", metavar="KEY=VALUE", help="override of the after run")
    p.add_argument("--json", metavar="FILE",
                   help="write {before: {...}, after: {...}, delta_pct: {...}}")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("bench", help="list or run the benchmarks of docs/BENCHMARKS.md")
    p.add_argument("name", nargs="?", help="inproc, process, transfer, explore, serving_sim, "
                   "host_gather, kernels (GPU), worker_step (GPU)")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="options passed to the benchmark")
    p.set_defaults(func=_cmd_bench)

    p = sub.add_parser("explore", help="search varied scenarios for a violation, shrink it and "
                       "write it as a replayable scenario")
    p.add_argument("scenario", help="scenario YAML file")
    p.add_argument("--examples", type=int, default=200, help="variants to try (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vary", action="append", metavar="KEY",
                   help="a key to vary (repeatable): topology, workload.requests, seed, "
                   "model.window, workload.dp_offset, transceiver.sticky_skip, deployment, "
                   "workload")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="fixed overrides")
    p.add_argument("--out", metavar="DIR", help="write the counterexample scenario here")
    p.set_defaults(func=_cmd_explore)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from ..scenario.functional import ScenarioError
    try:
        return args.func(args)
    except (BadInput, ScenarioError, ValueError) as exc:
        print(f"trtsim: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("trtsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:            # `trtsim run ... | head`: the reader left
        sys.stderr.close()
        return EXIT_OK
