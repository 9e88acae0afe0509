"""Interception cost (DESIGN 6): one unmodified torch.distributed program, four ways, one run.

The program is written for torchrun: ``init_process_group("gloo")`` from the environment, TP
and PP groups of a tp4 x pp2 layout from ``new_group``, then iterations of two small
``all_gather_object`` calls (one on its TP group, one on its PP group). It runs on 8 gloo
ranks

  - plain: 8 spawned processes, nothing of trtsim loaded;
  - plain under TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's own collective checks);
  - under ``trtsim.launch(..., backend="gloo", intercept=("torch",))`` with guard=strict and
    with guard=off (interception without checks).

Each rank times its loop (barrier, loop, barrier); a variant's time is the slowest rank's,
its figure the median over repeats, variants interleaved so drift hits all alike. Ratios are
to plain torch.distributed.

    python benchmarks/bench_intercept.py [--iterations N] [--repeat R] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import socket
import statistics
import time

import torch
import torch.distributed as tdist

TP, PP = 4, 2
WORLD = TP * PP


def program(iterations: int) -> float:
    """The unmodified program: knows nothing of trtsim."""
    tdist.init_process_group("gloo")
    rank = tdist.get_rank()
    tp_groups = [tdist.new_group(list(range(p * TP, (p + 1) * TP))) for p in range(PP)]
    pp_groups = [tdist.new_group(list(range(t, WORLD, TP))) for t in range(TP)]
    tp, pp = tp_groups[rank // TP], pp_groups[rank % TP]
    tdist.barrier()
    t0 = time.perf_counter()
    for it in range(iterations):
        out = [None] * TP
        tdist.all_gather_object(out, {"rank": rank, "it": it}, group=tp)
        out = [None] * PP
        tdist.all_gather_object(out, [rank, it], group=pp)
    tdist.barrier()
    elapsed = time.perf_counter() - t0
    tdist.destroy_process_group()
    return elapsed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _plain_rank(rank, port, iterations, detail, out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(WORLD))
    if detail:
        os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    out.put(program(iterations))


def plain(iterations: int, detail: bool) -> float:
    ctx = mp.get_context("spawn")
    out, port = ctx.Queue(), _free_port()
    procs = [ctx.Process(target=_plain_rank, args=(r, port, iterations, detail, out))
             for r in range(WORLD)]
    for p in procs:
        p.start()
    times = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
    return max(times)


def intercepted(iterations: int, guard: str) -> float:
    import trtsim
    res = trtsim.launch(program, tp=TP, pp=PP, backend="gloo", guard=guard,
                        intercept=("torch",), args=(iterations,), timeout=600)
    return max(res)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    variants = {
        "torch.distributed (plain)": lambda: plain(args.iterations, False),
        "torch.distributed DEBUG=DETAIL": lambda: plain(args.iterations, True),
        "intercepted, guard=off": lambda: intercepted(args.iterations, "off"),
        "intercepted, guard=strict": lambda: intercepted(args.iterations, "strict"),
    }
    samples = {k: [] for k in variants}
    for _ in range(args.repeat):
        for name, fn in variants.items():
            samples[name].append(fn())
    medians = {k: statistics.median(v) for k, v in samples.items()}
    report = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "iterations": args.iterations, "repeat": args.repeat, "median_s": medians,
              "samples_s": samples}
    base = medians["torch.distributed (plain)"]
    print(f"# {report['machine']}, torch {report['torch']}, {report['date']}")
    print(f"8 gloo ranks (tp4 pp2), {args.iterations} iterations of 2 all_gather_object, "
          f"median of {args.repeat}")
    for name, t in medians.items():
        print(f"  {name:<32} {t * 1e3:8.1f} ms  {t / base:5.2f}x  "
              f"{t / (2 * args.iterations) * 1e6:7.0f} us/collective  "
              f"[{min(samples[name]) * 1e3:.0f}, {max(samples[name]) * 1e3:.0f}] ms")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
