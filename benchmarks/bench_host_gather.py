"""Measure host-object all-gathers over torch.distributed gloo and fit the host-gather cost model.

What it times: ``torch.distributed.all_gather_object`` of a pickled ``bytes`` payload (16 B, 1 KB
and 64 KB by default) among 2, 4 and 8 spawned processes on this machine, the collective the
KV-cache transceiver's consensus and the executor's ADP gathers use (TRT-LLM runs them over MPI;
gloo stands in). Each call is timed on rank 0 with ``time.perf_counter`` after a warm-up and a
barrier; the median over the timed calls is reported (robust to scheduler noise when the ranks
outnumber the cores).

The fit is the model of ``trtsim.perf.comm_cost.host_gather_cost``:

    t(n, B) = fixed_s + per_rank_s * n + per_excess_rank_s * max(0, n - cores)
              + per_byte_s * n * B                                          (seconds)

with ``n`` ranks, ``B`` pickled bytes contributed by each rank (every rank receives n*B) and
``cores`` the machine's CPU count (ranks beyond it time-share the cores).
Fitted on relative error with non-negative coefficients (see ``fit``).

A second, much shorter section times a representative Python loop of the transceiver's
per-request, per-iteration bookkeeping (session lookup, future poll, state classification),
the estimate used for the Python transceiver's per-request polling overhead.

Run:  .venv/bin/python benchmarks/bench_host_gather.py [--ranks 2 4 8] [--payloads 16 1024 65536]
      [--iters 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import itertools
import json
import os
import pickle
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(rank: int, world: int, init_file: str, payloads: list[int], iters: int,
            warmup: int, out_file: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    results = {}
    for size in payloads:
        obj = b"x" * size
        out: list = [None] * world
        for _ in range(warmup):
            dist.all_gather_object(out, obj)
        dist.barrier()
        samples = []
        for _ in range(iters):
            t0 = time.perf_counter()
            dist.all_gather_object(out, obj)
            samples.append(time.perf_counter() - t0)
        assert all(len(o) == size for o in out)
        results[size] = {
            "pickled_bytes": len(pickle.dumps(obj)),
            "median_s": statistics.median(samples),
            "mean_s": statistics.fmean(samples),
            "min_s": min(samples),
            "p90_s": sorted(samples)[int(0.9 * (len(samples) - 1))],
        }
    dist.barrier()
    if rank == 0:
        with open(out_file, "w") as f:
            json.dump(results, f)
    dist.destroy_process_group()


def measure(ranks: list[int], payloads: list[int], iters: int, warmup: int) -> list[dict]:
    rows = []
    for n in ranks:
        with tempfile.TemporaryDirectory() as tmp:
            init_file = os.path.join(tmp, "init")
            out_file = os.path.join(tmp, "out.json")
            t0 = time.perf_counter()
            mp.spawn(_worker, args=(n, init_file, payloads, iters, warmup, out_file),
                     nprocs=n, join=True)
            wall = time.perf_counter() - t0
            with open(out_file) as f:
                res = json.load(f)
        for size in payloads:
            r = res[str(size)]
            rows.append({"ranks": n, "payload": size, **r})
            print(f"  n={n:2d} payload={size:6d} B (pickled {r['pickled_bytes']:6d} B): "
                  f"median {r['median_s'] * 1e6:9.1f} us  min {r['min_s'] * 1e6:8.1f} us  "
                  f"mean {r['mean_s'] * 1e6:9.1f} us  "
                  f"p90 {r['p90_s'] * 1e6:9.1f} us", flush=True)
        print(f"  (n={n}: spawn + run {wall:.1f} s)", flush=True)
    return rows


def fit(rows: list[dict], cores: int) -> dict:
    """Fit t = fixed + per_rank*n + per_excess_rank*max(0, n - cores) + per_byte*n*B.

    ``cores`` is this machine's CPU count: ranks beyond it time-share cores, which the
    ``per_excess_rank`` term absorbs (it vanishes where every rank has its own core). Least
    squares on *relative* error (rows weighted by 1/t, so 2-rank and 8-rank points count alike)
    with every coefficient >= 0: the best fit over the subsets of terms whose coefficients all
    come out non-negative.
    """
    names = ("fixed_s", "per_rank_s", "per_excess_rank_s", "per_byte_s")
    a = np.array([[1.0, r["ranks"], max(0, r["ranks"] - cores),
                   r["ranks"] * r["pickled_bytes"]] for r in rows])
    y = np.array([r["median_s"] for r in rows])
    w = 1.0 / y
    best = None
    for mask in itertools.product([0, 1], repeat=len(names)):
        cols = [i for i in range(len(names)) if mask[i]]
        if not cols:
            continue
        sol, *_ = np.linalg.lstsq(a[:, cols] * w[:, None], y * w, rcond=None)
        if (sol < 0).any():
            continue
        coef = np.zeros(len(names))
        coef[cols] = sol
        err = float(np.sum(((a @ coef - y) * w) ** 2))
        if best is None or err < best[0]:
            best = (err, coef)
    coef = best[1]
    rel = np.abs(a @ coef - y) / y
    out = {n: float(c) for n, c in zip(names, coef)}
    out.update(cores=cores, max_rel_error=float(rel.max()), mean_rel_error=float(rel.mean()),
               predicted_s=[float(v) for v in a @ coef])
    return out


# -- representative Python loop of the transceiver's per-request, per-iteration work -----------
@dataclass
class _Session:
    request_id: int
    future: Future
    state: str = "in_progress"


def transceiver_poll_loop_cost(num_requests: int = 256, iters: int = 2000) -> float:
    """Seconds per request per iteration of a Python status-poll loop over open sessions."""
    sessions = {}
    for i in range(num_requests):
        fut: Future = Future()
        if i % 3 == 0:
            fut.set_result(True)
        sessions[i] = _Session(i, fut)
    ids = list(sessions)
    t0 = time.perf_counter()
    for _ in range(iters):
        completed, pending = [], []
        for rid in ids:
            s = sessions.get(rid)
            if s is None:
                continue
            if s.future.done():
                s.state = "complete" if s.future.result() else "failed"
                completed.append(rid)
            else:
                pending.append(rid)
        ready = set(completed)
        _ = [rid for rid in ids if rid in ready]
    return (time.perf_counter() - t0) / (iters * num_requests)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--payloads", type=int, nargs="+", default=[16, 1024, 65536])
    p.add_argument("--iters", type=int, default=300)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--json", default=None, help="write measurements and fit to this file")
    args = p.parse_args(argv)

    info = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": platform.machine(), "processor": platform.processor() or "unknown",
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "platform": platform.platform(),
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
            "loadavg_before": os.getloadavg()}
    print("host-object all_gather_object over gloo:", json.dumps(info), flush=True)
    rows = measure(args.ranks, args.payloads, args.iters, args.warmup)
    coef = fit(rows, os.cpu_count() or 1)
    info["loadavg_after"] = os.getloadavg()
    print(f"load average before {info['loadavg_before']}, after {info['loadavg_after']}")
    print(f"fit t(n,B) = fixed + per_rank*n + per_excess_rank*max(0, n-{coef['cores']}) "
          f"+ per_byte*n*B:")
    print(f"  fixed_s           = {coef['fixed_s'] * 1e6:.1f} us")
    print(f"  per_rank_s        = {coef['per_rank_s'] * 1e6:.1f} us")
    print(f"  per_excess_rank_s = {coef['per_excess_rank_s'] * 1e6:.1f} us")
    print(f"  per_byte_s        = {coef['per_byte_s'] * 1e9:.3f} ns/B")
    print(f"  relative error: max {coef['max_rel_error']:.1%}, mean {coef['mean_rel_error']:.1%}")
    poll = transceiver_poll_loop_cost()
    print(f"python transceiver poll loop: {poll * 1e6:.3f} us per request per iteration")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "rows": rows, "fit": coef,
                       "python_poll_s_per_request_iter": poll}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
