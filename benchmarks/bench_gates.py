"""What observing latent gates costs on inproc: bench_inproc.py's program at 8 ranks
(tp4 pp2) and the kv_transfer scenario (tp4_pp2_dp_both: 8 ranks per instance), each under
guard strict with gates off and with gates observe, interleaved, the median of CPU seconds;
with the gates each call passes (observed per rank call).

    python benchmarks/bench_gates.py [--iterations N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import trtsim
from trtsim.comm import gate_board

from bench_inproc import prog


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def gates_per_call(fn) -> float:
    """Gates observed per rank call under observe (one extra run, counted)."""
    calls, gates = [0], [0]
    post = gate_board.GateBoard.post

    def counting(self, rec, rank, sig, seen):
        calls[0] += 1
        gates[0] += len(sig)
        return post(self, rec, rank, sig, seen)
    gate_board.GateBoard.post = counting
    try:
        fn("observe")
    finally:
        gate_board.GateBoard.post = post
    return gates[0] / max(calls[0], 1)


def compare(name, fn, repeat):
    off, obs = [], []
    for _ in range(repeat):
        off.append(_cpu(lambda: fn("off")))
        obs.append(_cpu(lambda: fn("observe")))
    a, b = statistics.median(off), statistics.median(obs)
    print(f"{name:<34} {a:>9.3f} {b:>9.3f} {b / a:>7.2f}x {gates_per_call(fn):>10.1f}",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    __import__("torch").set_num_threads(1)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, python "
          f"{platform.python_version()}, one core, load "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'workload (guard strict)':<34} {'off cpu s':>9} {'observe':>9} {'ratio':>8} "
          f"{'gates/call':>10}")
    compare(f"bench_inproc tp4pp2 x{args.iterations}",
            lambda g: trtsim.launch(prog, tp=4, pp=2, args=(args.iterations,), timeout=600,
                                    gates=g), args.repeat)
    compare("kv_transfer (tp4_pp2_dp_both)",
            lambda g: trtsim.run("kv_transfer", overrides={"gates": g}), args.repeat)


if __name__ == "__main__":
    main()
