"""Interception's own cost per call, apart from the real collective (DESIGN 6).

bench_intercept.py times a whole program; this separates trtsim's work from the real call's.
Each rank of ``trtsim.launch(..., backend="gloo", intercept=("torch",))`` runs guarded
``all_gather_object`` calls whose real function is swapped, inside the rank, for one that does
nothing, so what the rank measures is trtsim's path alone (the stand-in, the record, the
ledger post, the guard's member wait, the status after):

  - warm: one rank, a tight loop of guarded calls (caches hot: the cost as Python runs it);
  - after a real call: N ranks, each guarded call right after a bare real
    ``all_gather_object`` of the same group (the rank slept in gloo: caches cold, as in a
    program, where every guarded call follows a real one). With the guard strict it includes
    the member wait, so the members' skew as well.

Minimum over blocks for warm (the cost without noise), median for after a real call (the
skew is part of it); microseconds per call.

    python benchmarks/bench_intercept_cost.py [--ranks N] [--calls C] [--blocks B]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import torch
import torch.distributed as tdist
import torch.distributed.distributed_c10d as c10d

import trtsim
from trtsim.comm.scoped_install import current


def _noop_real():
    """Swap the real ``all_gather_object`` behind the stand-ins for a no-op; returns the undo."""
    real = current("torch.distributed").real
    saved = real.all_gather_object
    real.all_gather_object = lambda *args, **kwargs: None
    return lambda: setattr(real, "all_gather_object", saved)


def warm(calls: int, blocks: int) -> float:
    tdist.init_process_group("gloo")
    group = tdist.new_group([0])
    undo = _noop_real()
    best = float("inf")
    for _ in range(blocks):
        t0 = time.perf_counter()
        for it in range(calls):
            tdist.all_gather_object([None], it, group=group)
        best = min(best, (time.perf_counter() - t0) / calls)
    undo()
    return best * 1e6


def after_real(calls: int, blocks: int, ranks: int) -> float:
    tdist.init_process_group("gloo")
    group = tdist.new_group(list(range(ranks)))
    undo = _noop_real()
    clock, spent = time.perf_counter, []
    out = [None] * ranks
    for _ in range(blocks):
        total = 0.0
        for it in range(calls):
            c10d.all_gather_object(out, it, group=group)     # bare: the rank sleeps in gloo
            t0 = clock()
            tdist.all_gather_object(out, it, group=group)    # guarded, the real part a no-op
            total += clock() - t0
        spent.append(total / calls)
    undo()
    return statistics.median(spent) * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--blocks", type=int, default=7)
    args = ap.parse_args()
    print(f"# {platform.node()} {platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    print(f"guarded all_gather_object, real part a no-op: us per call "
          f"({args.calls} calls x {args.blocks} blocks)")
    for guard in ("off", "strict"):
        one = trtsim.launch(warm, tp=1, backend="gloo", guard=guard, intercept=("torch",),
                            args=(args.calls, args.blocks), timeout=600)
        many = trtsim.launch(after_real, tp=args.ranks, backend="gloo", guard=guard,
                             intercept=("torch",), args=(args.calls, args.blocks, args.ranks),
                             timeout=600)
        print(f"  guard={guard:<7} warm, 1 rank {one[0]:6.1f}   after a real call, "
              f"{args.ranks} ranks {statistics.median(many):6.1f}")


if __name__ == "__main__":
    main()
