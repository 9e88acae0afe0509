"""Host-object collectives of the control plane: gloo and MPI latency, and the straggler wait of
a host-bound loop. One command runs everything on a host and writes one JSON file:

    python benchmarks/bench_host_gather.py --ranks 2 8 16 --json trtsim/perf/data/host_gather.json

(run from the repository root of a checkout on the GPU machine's 16-core host; gloo through
spawned processes, then MPI through ``mpirun --allow-run-as-root --oversubscribe -n N`` of this
script for each N where mpi4py and mpirun are present; a few minutes). The MPI part alone:
``mpirun --allow-run-as-root -n 8 python benchmarks/bench_host_gather.py --mpi --json F``.
Needs torch, numpy and the standard library; mpi4py is optional (without it the MPI part is
skipped and says so).

What it measures, per backend and rank count:
- latency: ``all_gather_object`` (gloo) / ``comm.allgather`` (MPI, as TRT-LLM's MPIDist
  ``tp_allgather``) and a broadcast (gloo ``broadcast_object_list``; MPI a pickled header +
  payload ``Bcast``, as TRT-LLM's ``safe_broadcast``) of the consensus payloads: a list of a
  few request ids, and the packed outcome lists (cancelled, failed, completed), empty as when
  nothing is to process. Every call starts after a barrier; p10/p50/p90 over all ranks' calls.
- a host-bound loop: every rank does the same fixed amount of Python work per iteration (an
  op count calibrated once on rank 0 to ``--work-us``), then one gather. Per rank-iteration
  the work's duration and the time inside the gather (the wait) are recorded; per iteration
  the slowest member's excess, max_j(work_j) - mean_j(work_j): what a gather costs on top of
  its latency because every member waits for the slowest.
- the Python transceiver's per-request poll loop (trtsim.perf.comm_cost.PYTHON_TRANSCEIVER).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import pickle
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

PAYLOADS = {"ids": [1017, 1018, 1021, 1030], "outcome_empty": [[], [], []],
            "outcome": [[], [1021], [1017, 1018]]}
MPIRUN_ARGS = "--allow-run-as-root --oversubscribe"


# -- the two backends behind one face -------------------------------------------------------
class GlooComm:
    """torch.distributed over gloo (trtsim's process backend), pickled objects."""

    name = "gloo"

    def __init__(self, rank: int, size: int, init_file: str):
        import torch
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                                world_size=size)
        self.dist, self.rank, self.size = dist, rank, size

    def allgather(self, obj):
        out = [None] * self.size
        self.dist.all_gather_object(out, obj)
        return out

    def bcast(self, obj):
        box = [obj if self.rank == 0 else None]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        self.dist.barrier()

    def close(self) -> None:
        self.dist.destroy_process_group()


class MpiComm:
    """mpi4py's COMM_WORLD, as TRT-LLM's MPIDist uses it."""

    name = "mpi"

    def __init__(self):
        from mpi4py import MPI
        self.mpi, self.comm = MPI, MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def allgather(self, obj):
        return self.comm.allgather(obj)

    def bcast(self, obj):
        # a header with the pickled size, then the bytes: the two Bcasts of a safe broadcast
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL) if self.rank == 0 else b""
        head = np.array([len(data)], dtype=np.int64)
        self.comm.Bcast(head, root=0)
        buf = np.frombuffer(data, dtype=np.uint8).copy() if self.rank == 0 else \
            np.empty(int(head[0]), dtype=np.uint8)
        self.comm.Bcast(buf, root=0)
        return pickle.loads(buf.tobytes())

    def barrier(self) -> None:
        self.comm.Barrier()

    def close(self) -> None:
        pass


# -- what every rank runs -------------------------------------------------------------------
def _stats(values_s) -> dict:
    us = np.asarray(values_s, dtype=float) * 1e6
    p10, p50, p90 = np.percentile(us, [10, 50, 90])
    return {"p10_us": float(p10), "p50_us": float(p50), "p90_us": float(p90),
            "mean_us": float(us.mean()), "samples": int(us.size)}


def python_work(units: int) -> int:
    """A fixed amount of executor-like Python work: dict and list churn, string formatting."""
    table: dict[int, list] = {}
    acc = 0
    for i in range(units):
        slot = table.setdefault(i & 63, [])
        slot.append((i, f"r{i}"))
        if len(slot) > 8:
            acc += len(slot.pop(0)[1])
    return acc


def _calibrate(work_us: float) -> int:
    """Units of ``python_work`` that take about ``work_us`` here (median of 5 runs)."""
    units = 1000
    while True:
        t = sorted(_timed(lambda: python_work(units)) for _ in range(5))[2]
        if t > 2e-3:
            return max(1, int(units * work_us * 1e-6 / t))
        units *= 4


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure_latency(comm, iters: int, warmup: int) -> list[dict]:
    rows = []
    for coll in ("allgather", "bcast"):
        call = getattr(comm, coll)
        for name, obj in PAYLOADS.items():
            for _ in range(warmup):
                call(obj)
            samples = []
            for _ in range(iters):
                comm.barrier()
                samples.append(_timed(lambda: call(obj)))
            pooled = comm.allgather(samples)
            rows.append({"backend": comm.name, "ranks": comm.size, "collective": coll,
                         "payload": name, "pickled_bytes": len(pickle.dumps(obj)),
                         **_stats([s for part in pooled for s in part])})
    return rows


def measure_loop(comm, work_us: float, iters: int, warmup: int) -> dict:
    units = comm.bcast(_calibrate(work_us) if comm.rank == 0 else None)
    work, wait = [], []
    for it in range(warmup + iters):
        t0 = time.perf_counter()
        python_work(units)
        t1 = time.perf_counter()
        comm.allgather(PAYLOADS["ids"])
        t2 = time.perf_counter()
        if it >= warmup:
            work.append(t1 - t0)
            wait.append(t2 - t1)
    per_rank = comm.allgather((work, wait))
    w = np.array([p[0] for p in per_rank])            # ranks x iterations, seconds
    g = np.array([p[1] for p in per_rank])
    excess = w.max(axis=0) - w.mean(axis=0)
    return {"backend": comm.name, "ranks": comm.size, "work_us_target": work_us,
            "iterations": iters, "work": _stats(w.ravel()),
            "work_quantiles_us": [float(q) for q in np.percentile(w.ravel() * 1e6,
                                                                 np.linspace(0, 100, 101))],
            "excess": _stats(excess), "wait": _stats(g.ravel())}


def run_rank(comm, args) -> dict | None:
    """Both measurements on this rank; the results on rank 0 (None elsewhere)."""
    scale = 4 if comm.name == "mpi" else 1        # MPI calls are fast: more samples
    latency = measure_latency(comm, args.iters * scale, args.warmup)
    loops = [measure_loop(comm, w, args.loop_iters, args.warmup) for w in args.work_us]
    comm.barrier()
    return {"latency": latency, "jitter": loops} if comm.rank == 0 else None


def _gloo_rank(rank: int, size: int, init_file: str, args, out_file: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    comm = GlooComm(rank, size, init_file)
    res = run_rank(comm, args)
    if res is not None:
        with open(out_file, "w") as f:
            json.dump(res, f)
    comm.close()


def run_gloo(n: int, args) -> dict:
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        mp.spawn(_gloo_rank, args=(n, os.path.join(tmp, "init"), args, out), nprocs=n, join=True)
        with open(out) as f:
            return json.load(f)


def run_mpi(n: int, args) -> dict | None:
    """This script under mpirun with ``n`` ranks (None, with a message, where it cannot run)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        cmd = ["mpirun", *args.mpirun_args.split(), "-n", str(n), sys.executable,
               os.path.abspath(__file__), "--mpi", "--json", out, *_forwarded(args)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            print(f"  mpi n={n}: mpirun failed ({proc.returncode}): {proc.stderr[-400:]}")
            return None
        with open(out) as f:
            return json.load(f)


def _forwarded(args) -> list[str]:
    return ["--iters", str(args.iters), "--warmup", str(args.warmup), "--loop-iters",
            str(args.loop_iters), "--work-us", *map(str, args.work_us)]


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def mpi_available() -> str | None:
    """None if the MPI part can run here, else why not."""
    if not _has_mpi4py():
        return "mpi4py is not installed"
    if shutil.which("mpirun") is None:
        return "mpirun is not on PATH"
    return None


@dataclass
class _Session:
    request_id: int
    future: Future
    state: str = "in_progress"


def transceiver_poll_loop_cost(num_requests: int = 256, iters: int = 2000) -> float:
    """Seconds per request per iteration of a Python status-poll loop over open sessions
    (session lookup, future poll, state classification, ordered filter)."""
    sessions = {i: _Session(i, Future()) for i in range(num_requests)}
    for i in range(0, num_requests, 3):
        sessions[i].future.set_result(True)
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


def machine_info(argv: list[str]) -> dict:
    info = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": platform.machine(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "command": " ".join(["python", os.path.relpath(__file__), *argv]),
            "loadavg_before": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        info["cpu_model"] = names[0] if names else platform.processor()
    except OSError:
        info["cpu_model"] = platform.processor()
    import torch
    info["torch"] = torch.__version__
    if mpi_available() is None:
        import mpi4py
        from mpi4py import MPI
        info["mpi4py"] = mpi4py.__version__
        info["mpi_library"] = MPI.Get_library_version().strip().splitlines()[0]
    return info


def _print(res: dict) -> None:
    for r in res["latency"]:
        print(f"  {r['backend']:4s} n={r['ranks']:2d} {r['collective']:9s} {r['payload']:13s} "
              f"p10 {r['p10_us']:9.1f}  p50 {r['p50_us']:9.1f}  p90 {r['p90_us']:9.1f} us")
    for j in res["jitter"]:
        print(f"  {j['backend']:4s} n={j['ranks']:2d} loop work {j['work']['p50_us']:8.0f} us: "
              f"slowest-member excess p50 {j['excess']['p50_us']:7.1f} mean "
              f"{j['excess']['mean_us']:7.1f} p90 {j['excess']['p90_us']:7.1f}; wait in gather "
              f"p50 {j['wait']['p50_us']:7.1f} mean {j['wait']['mean_us']:7.1f} us", flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 8, 16])
    p.add_argument("--iters", type=int, default=300, help="timed calls per latency point")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--loop-iters", type=int, default=200, help="iterations of each loop")
    p.add_argument("--work-us", type=float, nargs="+", default=[1000.0, 4000.0, 12500.0],
                   help="Python work per loop iteration (us)")
    p.add_argument("--backends", nargs="+", default=["gloo", "mpi"], choices=["gloo", "mpi"])
    p.add_argument("--mpirun-args", default=MPIRUN_ARGS)
    p.add_argument("--mpi", action="store_true", help="this process is an MPI rank")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    if args.mpi:
        if not _has_mpi4py():
            print("MPI part skipped: mpi4py is not installed")
            return 0
        comm = MpiComm()
        res = run_rank(comm, args)
        if res is not None and args.json:
            with open(args.json, "w") as f:
                json.dump(res, f)
        return 0
    info = machine_info(argv)
    print("host-object collectives:", json.dumps(info), flush=True)
    out = {"schema": 1, "info": info, "latency": [], "jitter": [], "skipped": []}
    for backend in args.backends:
        why = mpi_available() if backend == "mpi" else None
        if why is not None:
            out["skipped"].append(f"mpi: {why}")
            print(f"MPI part skipped: {why}", flush=True)
            continue
        for n in args.ranks:
            res = run_gloo(n, args) if backend == "gloo" else run_mpi(n, args)
            if res is None:
                out["skipped"].append(f"{backend} n={n}: failed")
                continue
            _print(res)
            out["latency"] += res["latency"]
            out["jitter"] += res["jitter"]
    out["python_poll_s_per_request_iter"] = transceiver_poll_loop_cost()
    info["loadavg_after"] = os.getloadavg()
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
