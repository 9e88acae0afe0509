"""What each ``trtsim`` subcommand does; cli.py parses the arguments and maps outcomes to exit
statuses (0 the run holds, 1 an invariant is violated, 2 bad input)."""

from __future__ import annotations

import os
import subprocess
import sys

from .interrupt import InterruptLatch
from .output import BadInput, document, result_document, write_json
from .progress import Progress

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict:
    """``key=value`` pairs into a dict of dotted keys and YAML-read values."""
    from ..scenario.functional import ScenarioError, parse_value
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{flag} {item!r}: expected key=value (e.g. transceiver.sticky_skip=guarded)")
        try:
            out[key.strip()] = parse_value(value)
        except ScenarioError as exc:
            raise BadInput(f"{flag} {key.strip()}: {value!r}: {exc}") from None
    return out


def _single_threaded_torch() -> None:
    """The simulator's tensors are small and the inproc ranks share one thread: torch's
    intra-op pool only adds OpenMP spinning (an order of magnitude on a busy machine)."""
    import torch
    torch.set_num_threads(1)


def cmd_run(args) -> int:
    from ..jobs.dispatch import run_any
    from ..timeline.trace import write_trace
    from ..scenario.perf import PerfScenario
    from ..scenario.registry import load_any
    scenario = load_any(args.scenario, parse_sets(args.set))
    if args.census_rows and not args.json:
        raise BadInput("--census-rows: it selects what --json FILE writes; give --json too")
    if args.census_rows and isinstance(scenario, PerfScenario):
        raise BadInput(f"--census-rows: {scenario.source} is a perf scenario, which keeps no "
                       "per-rank census (--census prints the control plane it priced)")
    _single_threaded_torch()
    with InterruptLatch() as latch, Progress("run", check=latch.check) as progress:
        result = run_any(scenario, progress=progress, backend=args.backend)
    print(result.summary())
    if args.census:
        print()
        print(result.census.table() if result.census is not None
              else result.control.table())
    if args.json:
        write_json(args.json, result_document(result, census_rows=args.census_rows))
    if args.trace:
        try:
            write_trace(args.trace, result.trace_events())
        except OSError as exc:
            raise BadInput(f"--trace {args.trace}: cannot write ({exc.strerror})") from None
    return EXIT_OK if result.holds else EXIT_VIOLATION


def cmd_compare(args) -> int:
    from ..jobs.dispatch import run_any
    from .compare import comparison
    _single_threaded_torch()
    if args.b is None and not (args.set_a or args.set_b):
        raise BadInput("compare: give two scenarios, or one with --set-a/--set-b overrides")
    from ..scenario.registry import load_any
    # Both scenarios are read and checked before either runs: bad input fails at once.
    a = load_any(args.a, parse_sets(args.set_a, "--set-a"))
    b = load_any(args.b if args.b is not None else args.a, parse_sets(args.set_b, "--set-b"))
    with InterruptLatch() as latch, Progress("compare", total=2, check=latch.check) as progress:
        before = run_any(a, progress=progress)
        progress.update(1, "before done")
        after = run_any(b, progress=progress)
        progress.update(2, "after done")
    result = comparison(before, after)
    print(result.table())
    failing = [(name, r) for name, r in (("before", before), ("after", after)) if not r.holds]
    for name, r in failing:            # only a functional run can fail to hold
        print(f"{name}: verdict {r.verdict}, expected {r.scenario.expect}: the run does not hold")
    if args.json:
        write_json(args.json, document("compare", result.to_dict()))
    return EXIT_VIOLATION if failing else EXIT_OK


def cmd_explore(args) -> int:
    from .explore import explore
    _single_threaded_torch()
    with InterruptLatch() as latch, \
            Progress("explore", total=args.examples, check=latch.check) as progress:
        result = explore(args.scenario, examples=args.examples, seed=args.seed,
                         vary=tuple(args.vary or ("topology",)), overrides=parse_sets(args.set),
                         out_dir=args.out, progress=progress)
    print(result.summary())
    if args.json:
        write_json(args.json, document("explore", result.to_dict()))
    return EXIT_VIOLATION if result.found else EXIT_OK


def cmd_topologies(args) -> int:
    from ..layout.topology import format_table
    print(format_table())
    return EXIT_OK


def cmd_scenarios(args) -> int:
    """The shipped scenarios: name, kind and the first line of the description."""
    from ..scenario.registry import kind_of
    from ..scenario.shipped import scenario_names, scenario_path
    from ..scenario.source import load_raw
    rows = []
    for name in scenario_names():
        raw, _ = load_raw(scenario_path(name))
        about = " ".join(str(raw.get("description", "")).split())
        first = about.split(". ")[0]
        rows.append((name, kind_of(raw).name, first if len(first) <= 90 else first[:87] + "..."))
    width = max((len(n) for n, _, _ in rows), default=4)
    for name, kind, about in rows:
        print(f"{name:<{width}}  {kind:<10}  {about}")
    print(f"\nrun one by name: trtsim run {rows[0][0] if rows else 'NAME'}")
    return EXIT_OK


def cmd_schema(args) -> int:
    from .schema_doc import schema_markdown, schema_text
    print(schema_markdown() if args.markdown else schema_text(), end="")
    return EXIT_OK


def cmd_bench(args) -> int:
    from ..scenario.shipped import shipped_dir
    root = shipped_dir("benchmarks")
    if root is None:
        raise BadInput("bench: this installation ships no benchmarks/ folder")
    known = sorted(p.stem[len("bench_"):] for p in root.glob("bench_*.py"))
    if not args.name:
        print("benchmarks: " + ", ".join(known))
        print("run one: trtsim bench NAME [-- its options]; figures: docs/BENCHMARKS.md")
        return EXIT_OK
    if args.name not in known:
        raise BadInput(f"bench: {args.name!r} is not one of {', '.join(known)}")
    script = os.path.join(root, f"bench_{args.name}.py")
    extra = [a for a in args.rest if a != "--"]
    code = subprocess.call([sys.executable, script, *extra])
    return EXIT_OK if code == 0 else EXIT_BAD_INPUT if code == 2 else EXIT_VIOLATION
