"""How the inproc backend scales with the number of ranks (targets, issue 27: 4096 ranks x 50
collectives in <= 10 s, 16,384 ranks x 50 in <= 60 s, to a clean finish and to a report).

Every rank of a tp x pp layout (tp 4 by default, pp = ranks / 4) enters 50 labelled
collectives, alternating tp_allgather and pp_allgather, with set_iteration each pair; guard
strict. Two runs per size: the clean one (every collective completes), and one where the
last rank returns before its last pp_allgather, so its pp group deadlocks while every other
rank finishes (the time is until launch raises the report). Each figure is the median of
three launches, wall time and the process's CPU time (on a shared machine the CPU time is
the steadier figure; the header gives the load average). The deadlock check
runs whenever a rank blocks or finishes (``guard/waitgraph.py``), so both times should
grow about linearly with the ranks.

    python benchmarks/bench_inproc_scale.py [--max-ranks 4096] [--tp 4] [--collectives 50]
                                            [--repeat 3] [--sizes 4096 16384]
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
    times, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            trtsim.launch(prog, tp=tp, pp=pp, args=(collectives, skipper), timeout=3600)
            outcome = "ok"
        except trtsim.CollectiveDeadlock as err:
            outcome = f"deadlock reported, {len(err.ranks)} ranks"
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(times), statistics.median(cpu), outcome


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-ranks", type=int, default=4096)
    ap.add_argument("--tp", type=int, default=4)
    ap.add_argument("--collectives", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="launches per figure (median)")
    ap.add_argument("--sizes", type=int, nargs="*", help="these rank counts only")
    args = ap.parse_args()
    if args.tp < 1 or args.max_ranks < 2 * args.tp or args.collectives < 2 or args.repeat < 1:
        ap.error("need --tp >= 1, --max-ranks >= 2 * tp, --collectives >= 2, --repeat >= 1")
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, python {platform.python_version()}, "
          f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, load "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}, {args.collectives} collectives "
          "per rank, guard strict")
    print(f"{'ranks':>6} {'layout':>10} {'clean s':>9} {'cpu s':>7} {'rank calls/s':>13} "
          f"{'deadlock s':>11} {'cpu s':>7}  report")
    timed(args.tp, 2, args.collectives, -1, 1)           # imports and first-call caches
    sizes = args.sizes or [max(8, 2 * args.tp) << i for i in range(32)
                           if max(8, 2 * args.tp) << i <= args.max_ranks]
    for ranks in sizes:
        pp = ranks // args.tp
        clean, clean_cpu, _ = timed(args.tp, pp, args.collectives, -1, args.repeat)
        stuck, stuck_cpu, outcome = timed(args.tp, pp, args.collectives, ranks - 1, args.repeat)
        calls = ranks * args.collectives
        print(f"{ranks:>6} {f'tp{args.tp}pp{pp}':>10} {clean:>9.2f} {clean_cpu:>7.2f} "
              f"{calls / clean:>13,.0f} {stuck:>11.2f} {stuck_cpu:>7.2f}  {outcome}", flush=True)


if __name__ == "__main__":
    main()
