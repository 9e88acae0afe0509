"""How the inproc backend scales with the number of ranks (target: 4096 ranks x 50
collectives in <= 30 s).

Every rank of a tp x pp layout (tp 4 by default, pp = ranks / 4) enters 50 labelled
collectives, alternating tp_allgather and pp_allgather, with set_iteration each pair; guard
strict. Two runs per size: the clean one (every collective completes), and one where the
last rank returns before its last pp_allgather, so its pp group deadlocks while every other
rank finishes (the time is until launch raises the report). Each figure is the median of
three launches. The deadlock check
runs whenever a rank blocks or finishes (``comm/guard/waitgraph.py``), so both times should
grow about linearly with the ranks.

    python benchmarks/bench_inproc_scale.py [--max-ranks 4096] [--tp 4] [--collectives 50]
                                            [--repeat 3]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time

import trtsim


def prog(dist, collectives, skipper):
    for i in range(collectives // 2):
        dist.set_iteration(i)
        dist.tp_allgather(i, label="tp_state")
        if dist.rank == skipper and i == collectives // 2 - 1:
            return None
        dist.pp_allgather(i, label="pp_state")
    return None


def timed(tp, pp, collectives, skipper, repeat):
    """The median wall time of ``repeat`` launches, and what the last one ended with."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            trtsim.launch(prog, tp=tp, pp=pp, args=(collectives, skipper), timeout=3600)
            outcome = "ok"
        except trtsim.CollectiveDeadlock as err:
            outcome = f"deadlock reported, {len(err.ranks)} ranks"
        times.append(time.perf_counter() - t0)
    return statistics.median(times), outcome


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-ranks", type=int, default=4096)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--collectives", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="launches per figure (median)")
    args = ap.parse_args()
    if args.tp < 1 or args.max_ranks < 2 * args.tp or args.collectives < 2 or args.repeat < 1:
        ap.error("need --tp >= 1, --max-ranks >= 2 * tp, --collectives >= 2, --repeat >= 1")
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}, "
          f"{datetime.date.today()}, {args.collectives} collectives per rank, guard strict")
    print(f"{'ranks':>6} {'layout':>10} {'clean s':>9} {'rank calls/s':>13} "
          f"{'deadlock s':>11}  report")
    timed(args.tp, 2, args.collectives, -1, 1)           # imports and first-call caches
    ranks = max(8, 2 * args.tp)
    while ranks <= args.max_ranks:
        pp = ranks // args.tp
        clean, _ = timed(args.tp, pp, args.collectives, -1, args.repeat)
        stuck, outcome = timed(args.tp, pp, args.collectives, ranks - 1, args.repeat)
        calls = ranks * args.collectives
        print(f"{ranks:>6} {f'tp{args.tp}pp{pp}':>10} {clean:>9.2f} {calls / clean:>13,.0f} "
              f"{stuck:>11.2f}  {outcome}", flush=True)
        ranks *= 2


if __name__ == "__main__":
    main()
