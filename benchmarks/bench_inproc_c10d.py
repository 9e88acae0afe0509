"""What a guarded call costs on inproc's c10d-registered path (real ProcessGroups, ranks as
threads with a baton) against trtsim's own Distributed path (greenlets), in one run.

Every rank of a tp x pp layout runs iterations of a TP and a PP gather of a small host
object, three ways:

- ``dist``: ``dist.tp_allgather`` / ``dist.pp_allgather`` (greenlets, no interception);
- ``dist+threads``: the same calls with torch intercepted (so ranks run as threads), to
  separate the hand-off cost from the API's;
- ``torch``: ``torch.distributed.all_gather_object`` on the groups of ``new_group`` (the
  interception's stand-ins, c10d's real groups, threads).

    python benchmarks/bench_inproc_c10d.py [--iterations N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import trtsim


def dist_prog(dist, iterations):
    for it in range(iterations):
        dist.set_iteration(it)
        dist.tp_allgather(it, label="tp_state")
        dist.pp_allgather(it, label="pp_state")


def torch_prog(dist, iterations):
    import torch.distributed as tdist
    tdist.init_process_group("gloo")
    m = dist.mapping
    tp_groups = [tdist.new_group(m.with_rank(r).tp_group) for r in range(0, m.world_size,
                                                                        m.tp_size)]
    pp_groups = [tdist.new_group(m.with_rank(r).pp_group) for r in range(m.tp_size)]
    tp, pp = tp_groups[m.pp_rank], pp_groups[m.tp_rank]
    tp_out, pp_out = [None] * m.tp_size, [None] * m.pp_size
    for it in range(iterations):
        dist.set_iteration(it)
        tdist.all_gather_object(tp_out, it, group=tp)
        tdist.all_gather_object(pp_out, it, group=pp)


WAYS = {"dist": (dist_prog, ()), "dist+threads": (dist_prog, ("torch",)),
        "torch": (torch_prog, ("torch",))}


def measure(way, tp, pp, iterations, repeat) -> float:
    prog, intercept = WAYS[way]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        trtsim.launch(prog, tp=tp, pp=pp, args=(iterations,), intercept=intercept, timeout=600)
        times.append(time.perf_counter() - t0)
    return 2 * iterations * tp * pp / statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, torch {__import__('torch').__version__}, one core")
    print(f"{'ranks':>5} {'layout':>8} {'way':>13} {'rank calls/s':>13} {'us/call':>8}")
    for tp, pp in ((4, 2), (8, 2)):
        for way in WAYS:
            rate = measure(way, tp, pp, args.iterations, args.repeat)
            print(f"{tp * pp:>5} {f'tp{tp}pp{pp}':>8} {way:>13} {rate:>13,.0f} "
                  f"{1e6 / rate:>8.1f}")


if __name__ == "__main__":
    main()
