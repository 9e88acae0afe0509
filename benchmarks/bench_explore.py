"""Exploration speed on the inproc backend (DESIGN 6: >= 200 schedules a minute): variants of
the transfer scenario per minute, with the fix in place so the search runs its full budget.

    python benchmarks/bench_explore.py [--examples N]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from trtsim.app.explore import explore


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=200)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.machine()}, python {platform.python_version()}, one core")
    for vary in (("topology", "workload.requests"), ("seed", "workload.requests")):
        t0 = time.perf_counter()
        res = explore("scenarios/kv_transfer.yaml", examples=args.examples, seed=0, vary=vary,
                      overrides={"transceiver.sticky_skip": "guarded", "guard": "lockstep"})
        dt = time.perf_counter() - t0
        print(f"vary {'+'.join(vary):<28} {res.examples_run:4d} variants in {dt:6.1f} s -> "
              f"{res.examples_run / dt * 60:6.0f} per minute (found: {res.found})")
    t0 = time.perf_counter()
    res = explore("scenarios/kv_transfer.yaml", examples=args.examples, seed=0,
                  vary=("topology", "workload.requests"),
                  overrides={"transceiver.sticky_skip": "unguarded", "guard": "lockstep"})
    print(f"unguarded: found {res.scenario} after {res.examples_run} runs in "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
