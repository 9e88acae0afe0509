"""Guarded collectives per second on the inproc backend (DESIGN 6: >= 20,000/s on one core).

Every rank of a tp x pp layout runs iterations of a small tp_allgather and pp_allgather
(labelled, with set_iteration each iteration), under guard strict, lockstep and off. Three
rates: rank calls/s (each rank's entry into a collective, each one recorded and checked by
the guard), group collectives/s (completed collectives, each pairing all members), and rank
calls per second of the process's CPU time (steadier than wall time on a shared machine).

    python benchmarks/bench_inproc.py [--iterations N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import trtsim


def prog(dist, iterations):
    for it in range(iterations):
        dist.set_iteration(it)
        dist.tp_allgather(it, label="tp_state")
        dist.pp_allgather(it, label="pp_state")


def measure(tp, pp, guard, iterations, repeat):
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        trtsim.launch(prog, tp=tp, pp=pp, args=(iterations,), guard=guard, timeout=600)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    dt = statistics.median(times)
    world = tp * pp
    rank_calls = 2 * iterations * world
    group_calls = iterations * (pp + tp)   # pp TP groups and tp PP groups per iteration
    return rank_calls / dt, group_calls / dt, rank_calls / statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    __import__("torch").set_num_threads(1)    # no OpenMP workers spinning on that one core
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, torch {__import__('torch').__version__}, one core, "
          f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'ranks':>5} {'layout':>8} {'guard':>8} {'rank calls/s':>13} {'group coll/s':>13} "
          f"{'per cpu s':>10}")
    for tp, pp in ((4, 2), (8, 2)):
        for guard in ("strict", "lockstep", "off"):
            rc, gc, per_cpu = measure(tp, pp, guard, args.iterations, args.repeat)
            print(f"{tp * pp:>5} {f'tp{tp}pp{pp}':>8} {guard:>8} {rc:>13,.0f} {gc:>13,.0f} "
                  f"{per_cpu:>10,.0f}", flush=True)


if __name__ == "__main__":
    main()
