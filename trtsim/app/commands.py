"""What each ``trtsim`` subcommand does; cli.py parses the arguments and maps outcomes to exit
statuses (0 the run holds, 1 an invariant is violated, 2 bad input, 130 interrupted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from .interrupt import InterruptLatch
from .output import BadInput, document, result_document, write_json, writing
from .output_paths import Output, check_outputs
from .progress import Progress
from ..user_cache import user_cache

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


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


def _scenario_files(*sources: str | None) -> tuple[str, ...]:
    """The files scenario arguments name (a shipped scenario's name: its file), the inputs an
    output must not be; one that names nothing stays as given (loading it says so)."""
    from ..scenario.schema import ScenarioError
    from ..scenario.source import find_scenario
    out = []
    for source in sources:
        if source is not None:
            try:
                out.append(find_scenario(source))
            except ScenarioError:
                out.append(source)
    return tuple(out)


def cmd_run(args) -> int:
    inputs = _scenario_files(args.scenario)
    out = getattr(args, "out", None)
    check_outputs([Output("--json", args.json), Output("--trace", args.trace),
                   Output("--out", out, folder=True)], inputs)
    from ..backends.counterexample import NotWritten
    from ..jobs.dispatch import run_any
    from ..timeline.trace import write_trace
    from ..scenario.perf import PerfScenario
    from ..scenario.registry import load_any
    sets = parse_sets(args.set)
    if getattr(args, "gates", None):
        sets["gates"] = args.gates
    scenario = load_any(args.scenario, sets)
    if args.census_rows and not args.json:
        raise BadInput("--census-rows: it selects what --json FILE writes; give --json too")
    if args.census_rows and isinstance(scenario, PerfScenario):
        raise BadInput(f"--census-rows: {scenario.source} is a perf scenario, which keeps no "
                       "per-rank census (--census prints the control plane it priced)")
    _single_threaded_torch()
    with InterruptLatch() as latch, Progress("run", check=latch.check) as progress:
        try:
            result = run_any(scenario, progress=progress, backend=args.backend, out_dir=out)
        except NotWritten as exc:
            raise BadInput(f"--out {exc}") from None
    print(result.summary())
    if args.census:
        print()
        print(result.census.table() if result.census is not None
              else result.control.table())
    if args.json:
        write_json(args.json, result_document(result, census_rows=args.census_rows),
                   inputs=inputs)
    if args.trace:
        with writing("--trace", args.trace):
            write_trace(args.trace, result.trace_events())
    return EXIT_OK if result.holds else EXIT_VIOLATION


def cmd_compare(args) -> int:
    from ..jobs.dispatch import run_any
    from .compare import comparison, load_pair
    inputs = _scenario_files(args.a, args.b)
    check_outputs([Output("--json", args.json)], inputs)
    _single_threaded_torch()
    if args.b is None and not (args.set_a or args.set_b):
        raise BadInput("compare: give two scenarios, or one with --set-a/--set-b overrides")
    # Both scenarios are read and checked before either runs: bad input fails at once.
    a, b = load_pair(args.a, args.b, parse_sets(args.set_a, "--set-a"),
                     parse_sets(args.set_b, "--set-b"))
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
        write_json(args.json, document("compare", result.to_dict()), inputs=inputs)
    return EXIT_VIOLATION if failing else EXIT_OK


def _hypothesis_home() -> None:
    """Hypothesis keeps its files (example database, the constants it reads from the code)
    in ``.hypothesis/`` of the working directory unless told otherwise; the command keeps
    them in the user's cache folder (``$XDG_CACHE_HOME/trtsim/hypothesis``, default
    ``~/.cache``). ``HYPOTHESIS_STORAGE_DIRECTORY`` still wins. Only the command does this:
    a test that calls ``explore`` keeps its own project's hypothesis settings."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    from hypothesis.configuration import set_hypothesis_home_dir
    set_hypothesis_home_dir(user_cache("hypothesis"))


def cmd_explore(args) -> int:
    from .explore import explore
    inputs = _scenario_files(args.scenario)
    check_outputs([Output("--json", args.json), Output("--out", args.out, folder=True)], inputs)
    _hypothesis_home()
    _single_threaded_torch()
    sets = parse_sets(args.set)
    if getattr(args, "flip_gates", False):
        sets["gates"] = "flip"
    with InterruptLatch() as latch, \
            Progress("explore", total=args.examples, check=latch.check) as progress:
        result = explore(args.scenario, examples=args.examples, seed=args.seed,
                         vary=tuple(args.vary or ("topology",)), overrides=sets,
                         out_dir=args.out, progress=progress, hunt=args.hunt)
    print(result.summary())
    if args.json:
        write_json(args.json, document("explore", result.to_dict()), inputs=inputs)
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


# A benchmark that needs a CUDA GPU says so in a line of its own file (read, not imported:
# importing it could need the GPU).
_GPU_MARK = re.compile(r"^REQUIRES_GPU = True\b", re.M)


def benchmarks() -> dict[str, bool]:
    """The shipped benchmarks (``benchmarks/bench_NAME.py``): name -> whether it needs a CUDA
    GPU, sorted by name. The one list ``trtsim bench`` prints, runs and its help shows."""
    from ..scenario.shipped import shipped_dir
    root = shipped_dir("benchmarks")
    return {p.stem[len("bench_"):]: bool(_GPU_MARK.search(p.read_text()))
            for p in sorted(root.glob("bench_*.py"))} if root is not None else {}


def benchmark_list() -> str:
    """``explore, inproc, kernels (GPU), ...``: the list as help and ``trtsim bench`` show it."""
    return ", ".join(f"{n} (GPU)" if gpu else n for n, gpu in benchmarks().items())


def _cuda_absent() -> str | None:
    """Why torch sees no CUDA GPU, or None when it sees one."""
    import torch
    if torch.cuda.is_available():
        return None
    build = "a CPU build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
    return f"torch {torch.__version__} ({build}) sees no CUDA GPU"


def cmd_bench(args) -> int:
    from ..scenario.shipped import shipped_dir
    known = benchmarks()
    if not known:
        raise BadInput("bench: this installation ships no benchmarks/ folder")
    if not args.name:
        print("benchmarks: " + benchmark_list())
        print("run one: trtsim bench NAME [-- its options]; figures: docs/BENCHMARKS.md")
        return EXIT_OK
    if args.name not in known:
        raise BadInput(f"bench: {args.name!r} is not one of {', '.join(known)}")
    if known[args.name] and (why := _cuda_absent()):
        raise BadInput(f"bench {args.name}: needs a CUDA GPU; {why} (its figures from an H200 "
                       "are in docs/BENCHMARKS.md)")
    script = os.path.join(shipped_dir("benchmarks"), f"bench_{args.name}.py")
    extra = [a for a in args.rest if a != "--"]
    code = subprocess.call([sys.executable, script, *extra])
    return EXIT_OK if code == 0 else EXIT_BAD_INPUT if code == 2 else EXIT_VIOLATION
