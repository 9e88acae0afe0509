"""Simulating the 5.3 benchmark (128 requests: one context server of 4 ranks, four generation
servers of 8 ranks) on one core; target <= 10 s, i.e. >= 20x faster than the 196.2 s the run
took on the cluster. Includes counting the control plane on the executor (three census
workloads per role loop) and the three simulations of the band.

    python benchmarks/bench_serving_sim.py [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from trtsim.jobs import control_plane
from trtsim.jobs.perf_run import run_perf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.machine()}, python {platform.python_version()}, one core")
    for variant in ("off", "guarded"):
        times = []
        for _ in range(args.repeat):
            control_plane.measure_control_plane.cache_clear()     # count it every time
            t0 = time.perf_counter()
            res = run_perf("scenarios/incident_sticky_skip.yaml",
                           {"transceiver.sticky_skip": variant})
            times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"5.3 sticky_skip={variant:<8} {res.metrics['completed']} requests: "
              f"median {med:5.2f} s, max {max(times):5.2f} s -> {196.2 / med:5.0f}x faster "
              f"than the cluster's run")


if __name__ == "__main__":
    main()
