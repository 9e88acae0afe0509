"""How long ``trtsim lint`` takes: a whole package (vLLM's, from its wheel) and one file.

    python benchmarks/bench_lint.py PACKAGE_DIR [--file FILE] [--repeat N]

Prints wall and CPU seconds of the whole package (files, functions, collective calls,
findings, fixpoint rounds) and of the single file, best of ``--repeat`` runs. The targets of
docs/BENCHMARKS.md: the whole ``vllm`` package within 60 s on one core, one file within 1 s.
Run it on one core (``taskset -c 0``) for the one-core figure.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from trtsim.lint import lint  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(paths: list[str], repeat: int) -> dict:
    """The best wall and CPU seconds of ``repeat`` lints of ``paths``, and what they saw."""
    best = None
    for _ in range(repeat):
        c0, t0 = _cpu(), time.perf_counter()
        result = lint(paths)
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        if best is None or cpu < best["cpu_s"]:
            best = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "files": result.files,
                    "functions": result.functions, "collectives": result.collectives,
                    "findings": len(result.findings), "rounds": result.rounds}
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="a package folder, e.g. vllm/ unpacked from its wheel")
    parser.add_argument("--file", help="one file to time on its own (default: the package's "
                        "largest file under distributed/)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (best counts)")
    args = parser.parse_args()
    single = args.file or max(
        (os.path.join(d, f) for d, _, fs in os.walk(os.path.join(args.package, "distributed"))
         for f in fs if f.endswith(".py")), key=os.path.getsize)
    print(f"one file  {single}: {measure([single], max(args.repeat, 3))}")
    print(f"package   {args.package}: {measure([args.package], args.repeat)}")
    print(f"cores: {os.cpu_count()}, load: {os.getloadavg()}, python {sys.version.split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
