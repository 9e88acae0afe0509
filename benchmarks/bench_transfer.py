"""The KV transfer scenario on the inproc backend (DESIGN 6: tp4_pp2_dp_both in <= 0.5 s, so
hypothesis can try >= 200 schedules a minute), and the executor scenarios' wall time.

    python benchmarks/bench_transfer.py [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from trtsim.jobs.run import run


def timed(source, overrides, repeat):
    times, res = [], None
    for seed in range(repeat):
        t0 = time.perf_counter()
        res = run(source, overrides={**overrides, "seed": seed})
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times), res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    __import__("torch").set_num_threads(1)    # no OpenMP workers spinning on that one core
    print(f"# {platform.node()} {platform.machine()}, python {platform.python_version()}, one core")
    run("scenarios/kv_transfer.yaml")                                  # warm imports
    rows = [
        ("kv_transfer tp4_pp2_dp_both (16 ranks)", "scenarios/kv_transfer.yaml", {}),
        ("kv_transfer tp4_pp2_dp_both, window [256,24]", "scenarios/kv_transfer.yaml",
         {"model.window": [256, 24]}),
        ("kv_transfer tp4_pp4 (32 ranks)", "scenarios/kv_transfer.yaml", {"topology": "tp4_pp4"}),
        ("kv_transfer unguarded + lockstep (mismatch)", "scenarios/kv_transfer.yaml",
         {"transceiver.sticky_skip": "unguarded", "guard": "lockstep"}),
    ]
    for name, src, ov in rows:
        med, worst, res = timed(src, ov, args.repeat)
        print(f"{name:<48} median {med * 1e3:7.1f} ms  max {worst * 1e3:7.1f} ms  "
              f"-> {60 / med:6.0f} runs/min  ({res.verdict})")
    for src in ("scenarios/executor_tp4_pp2_dp_both.yaml", "scenarios/executor_ctx_adp4_gen_tp8.yaml"):
        med, _, res = timed(src, {}, 1)
        m = res.metrics
        print(f"{os.path.basename(src):<48} {med:6.2f} s  ctx {m['ctx_iterations']} / gen "
              f"{m['gen_iterations']} iterations, {m['completed']} requests ({res.verdict})")


if __name__ == "__main__":
    main()
