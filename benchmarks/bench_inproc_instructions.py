"""Instructions per guarded rank call on the inproc backend, counted by callgrind: a figure a
shared machine's neighbours do not move, where wall time does.

    python benchmarks/bench_inproc_instructions.py [--guard strict] [--iterations 1000]

Runs the loop of ``bench_inproc.py`` (tp4 x pp2, one tp and one pp all-gather per iteration)
under ``valgrind --tool=callgrind`` twice, with 100 and 100 + N iterations, and divides the
difference by the N x 8 x 2 rank calls it adds: the launch's set-up, torch's import and a
warm-up launch cancel out. Needs valgrind on PATH.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

RANKS, CALLS_PER_ITERATION, BASE = 8, 2, 100


def _child(iterations: int, guard: str) -> None:
    import trtsim

    def prog(dist, n):
        for it in range(n):
            dist.set_iteration(it)
            dist.tp_allgather(it, label="tp_state")
            dist.pp_allgather(it, label="pp_state")

    trtsim.launch(prog, tp=4, pp=2, args=(20,), guard=guard, timeout=600)    # warm-up
    trtsim.launch(prog, tp=4, pp=2, args=(iterations,), guard=guard, timeout=600)


def _instructions(iterations: int, guard: str) -> int:
    proc = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         __file__, "--child", str(iterations), "--guard", guard],
        capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", proc.stderr).group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--guard", default="strict", choices=["strict", "lockstep", "off"])
    ap.add_argument("--iterations", type=int, default=1000, help="iterations added (N)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        _child(args.child, args.guard)
        return 0
    if shutil.which("valgrind") is None:
        print("bench_inproc_instructions: valgrind is not on PATH", file=sys.stderr)
        return 2
    base = _instructions(BASE, args.guard)
    more = _instructions(BASE + args.iterations, args.guard)
    calls = args.iterations * RANKS * CALLS_PER_ITERATION
    print(f"guard {args.guard}: {(more - base) / calls:,.0f} instructions per rank call "
          f"({calls:,} rank calls added)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
