"""Host-object collectives of the control plane, measured as a deployment runs them: latency,
and the per-rank spread of the host work that makes every member of a gather wait for the
slowest. One command runs everything on a host and writes one JSON file:

    python benchmarks/bench_host_gather.py --squeeze 4 --json trtsim/perf/data/host_gather.json

(from the repository root of a checkout on the GPU machine's host; 2, 4 and 8 ranks, each
count launched ``--runs`` times for MPI (5) and ``--gloo-runs`` times for gloo (2), fresh
processes each time; MPI through ``mpirun --bind-to none -n N`` of this script where mpi4py
and mpirun are present, gloo through spawned processes; a few minutes).
Needs torch, numpy and the standard library; mpi4py is optional (without it the MPI part is
skipped and says so).

Deployment discipline (what a serving worker has; an oversubscribed host measures its own
scheduler instead): at most one rank per physical core, each rank pinned to a core of its own
(``os.sched_setaffinity``, one logical CPU per core, read from /sys), and the cyclic GC
collected, frozen and disabled in every rank, as TensorRT-LLM's worker runs under
``TRTLLM_WORKER_DISABLE_GC=1`` (which its perf-sanity files set). A rank count above the
physical cores is refused, unless ``--squeeze K`` asks for a deliberately oversubscribed run
(every rank on the first K cores, none pinned): that run is written under ``excluded`` with
the reason, never beside the prices.

What it measures, per backend, rank count and run:
- latency: ``all_gather_object`` (gloo) / ``comm.allgather`` (MPI, as TRT-LLM's MPIDist
  ``tp_allgather``) and a broadcast (gloo ``broadcast_object_list``; MPI a pickled header +
  payload ``Bcast``, as TRT-LLM's ``safe_broadcast``) of the consensus payloads: a few
  request ids, and the packed outcome lists, empty and not. Every call starts after a
  barrier; p10/p50/p90/mean over all ranks' calls.
- jitter (MPI by default): every rank does the same fixed unit of Python work (an op count
  calibrated once on rank 0 to ``--work-us``), then one gather, per iteration. Recorded: the
  distribution of each rank-iteration's work relative to the run's mean work (200 midpoint
  quantiles: the spread / work the model draws from), and, to check the model against, the
  measured slowest-member excess per iteration, max_j(work_j) - mean_j(work_j).
- the Python transceiver's per-request poll loop (trtsim.perf.comm_cost.PYTHON_TRANSCEIVER).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
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
MPIRUN_ARGS = "--allow-run-as-root --bind-to none"
QUANTILES = (np.arange(200) + 0.5) / 200          # midpoints: no sample's extreme stands alone


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


# -- the deployment's discipline ------------------------------------------------------------
def physical_cores() -> list[int]:
    """One logical CPU per physical core this process may run on (the lowest-numbered sibling),
    read from /sys; every allowed CPU where the topology is not readable."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        list(range(os.cpu_count() or 1))
    first: dict[tuple[str, str], int] = {}
    for cpu in allowed:
        base = f"/sys/devices/system/cpu/cpu{cpu}/topology"
        try:
            with open(f"{base}/physical_package_id") as f, open(f"{base}/core_id") as g:
                key = (f.read().strip(), g.read().strip())
        except OSError:
            key = ("?", str(cpu))
        first.setdefault(key, cpu)
    return sorted(first.values())


def _spin(cpu: int, go, seconds: float, out) -> None:
    """Count loop turns on ``cpu`` for ``seconds`` once ``go`` is set (a probe process)."""
    os.sched_setaffinity(0, {cpu})
    go.wait()
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    out.put((cpu, n))


def _rates(cpus: list[int], seconds: float) -> dict[int, int]:
    """Loop turns each of ``cpus`` makes while all of them spin at once."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    go, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_spin, args=(c, go, seconds, out)) for c in cpus]
    for proc in procs:
        proc.start()
    go.set()
    rates = dict(out.get() for _ in procs)
    for proc in procs:
        proc.join()
    return rates


def independent_cores(cpus: list[int], want: int, seconds: float = 0.3,
                      held: float = 0.85) -> tuple[list[int], dict]:
    """Logical CPUs that run at full speed all at once, found by running them (a guest's
    /sys topology need not show which vCPUs share a physical core on the host): each CPU's
    speed alone, then CPUs added one at a time, kept when every chosen CPU still runs at
    ``held`` of its own speed with it. Returns the chosen CPUs and what was seen."""
    solo = {c: _rates([c], seconds)[c] for c in cpus}
    chosen: list[int] = []
    refused = {}
    for c in cpus:
        if len(chosen) == want:
            break
        together = _rates(chosen + [c], seconds)
        slowest = min(together[x] / solo[x] for x in together)
        if slowest >= held:
            chosen.append(c)
        else:
            refused[c] = round(slowest, 3)
    return chosen, {"solo_turns": solo, "refused_slowest_share": refused, "held": held,
                    "seconds": seconds}


def worker_setup(rank: int, cpus: list[int]) -> None:
    """Pin this rank to its core (when ``cpus`` names one per rank) and stop the cyclic GC as
    a serving worker does: collect, freeze what exists, disable."""
    if cpus and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpus[rank]})
    gc.collect()
    gc.freeze()
    gc.disable()


# -- what every rank runs -------------------------------------------------------------------
def _stats(values) -> dict:
    v = np.asarray(values, dtype=float)
    p10, p50, p90 = np.percentile(v, [10, 50, 90])
    return {"p10": float(p10), "p50": float(p50), "p90": float(p90), "mean": float(v.mean()),
            "samples": int(v.size)}


def _stats_us(values_s) -> dict:
    return {f"{k}_us" if k != "samples" else k: v
            for k, v in _stats(np.asarray(values_s) * 1e6).items()}


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
                         **_stats_us([s for part in pooled for s in part])})
    return rows


def measure_loop(comm, work_us: float, iters: int, warmup: int) -> dict:
    units = comm.bcast(_calibrate(work_us) if comm.rank == 0 else None)
    work = []
    for it in range(warmup + iters):
        t0 = time.perf_counter()
        python_work(units)
        t1 = time.perf_counter()
        comm.allgather(PAYLOADS["ids"])
        if it >= warmup:
            work.append(t1 - t0)
    w = np.array(comm.allgather(work))               # ranks x iterations, seconds
    relative = w / w.mean()
    excess = w.max(axis=0) - w.mean(axis=0)
    return {"backend": comm.name, "ranks": comm.size, "work_us_target": work_us,
            "iterations": iters, "work": _stats_us(w.ravel()),
            "relative_quantiles": [float(q) for q in np.quantile(relative.ravel(), QUANTILES)],
            "excess": _stats_us(excess), "relative_excess": _stats(excess / w.mean())}


def run_rank(comm, args) -> dict | None:
    """Both measurements on this rank; the results on rank 0 (None elsewhere)."""
    scale = 4 if comm.name == "mpi" else 1        # MPI calls are fast: more samples
    latency = measure_latency(comm, args.iters * scale, args.warmup)
    loops = [measure_loop(comm, w, args.loop_iters, args.warmup) for w in args.work_us] \
        if comm.name in args.loop_backends else []
    comm.barrier()
    return {"latency": latency, "jitter": loops} if comm.rank == 0 else None


def _gloo_rank(rank: int, size: int, init_file: str, args, out_file: str) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    worker_setup(rank, args.cpus)
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
        cmd = ["mpirun", *args.mpirun_args.split(), *(["--oversubscribe"] if not args.cpus
                                                      else []), "-n", str(n), sys.executable,
               os.path.abspath(__file__), "--mpi", "--json", out, *_forwarded(args)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            print(f"  mpi n={n}: mpirun failed ({proc.returncode}): {' '.join(cmd)}\n"
                  f"{proc.stdout[-600:]}{proc.stderr[-600:]}")
            return None
        with open(out) as f:
            return json.load(f)


def _forwarded(args) -> list[str]:
    return ["--iters", str(args.iters), "--warmup", str(args.warmup), "--loop-iters",
            str(args.loop_iters), "--work-us", *map(str, args.work_us), "--loop-backends",
            *args.loop_backends, "--cpus", ",".join(map(str, args.cpus))]


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


def machine_info(argv: list[str], cores: list[int]) -> dict:
    info = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "machine": platform.machine(), "cpus": os.cpu_count(), "physical_cores": len(cores),
            "python": platform.python_version(), "platform": platform.platform(),
            "command": " ".join(["python", os.path.relpath(__file__), *argv]),
            "loadavg_before": os.getloadavg(), "gc": "collected, frozen and disabled per rank"}
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        info["cpu_model"] = names[0] if names else platform.processor()
    except OSError:
        info["cpu_model"] = platform.processor()
    import torch
    info["torch"] = torch.__version__
    if mpi_available() is None:
        # in a child: MPI initialised here would leave its environment to the mpirun this
        # process starts, and Open MPI 4's mpirun then exits 1 without a word
        probe = subprocess.run([sys.executable, "-c", "import mpi4py; from mpi4py import MPI; "
                                "print(mpi4py.__version__); print(MPI.Get_library_version())"],
                               capture_output=True, text=True)
        lines = probe.stdout.strip().splitlines() + ["?", "?"]
        info["mpi4py"], info["mpi_library"] = lines[0], lines[1].rstrip("\x00")
    return info


def _print(res: dict, tag: str) -> None:
    for r in res["latency"]:
        if r["payload"] == "ids":
            print(f"  {tag} {r['collective']:9s} ids  p50 {r['p50_us']:8.1f}  mean "
                  f"{r['mean_us']:8.1f} us")
    for j in res["jitter"]:
        print(f"  {tag} work {j['work']['p50_us']:8.0f} us: spread p10-p90 "
              f"{j['relative_quantiles'][20]:.4f}-{j['relative_quantiles'][179]:.4f}, measured "
              f"excess mean {j['excess']['mean_us']:7.1f} us", flush=True)


def _launch(backend: str, n: int, args) -> dict | None:
    return run_gloo(n, args) if backend == "gloo" else run_mpi(n, args)


def _record(out: dict, res: dict, run: int, pinned: bool, into: str, why: str = "") -> None:
    for key in ("latency", "jitter"):
        for row in res[key]:
            row.update(run=run, pinned=pinned, oversubscribed=bool(why))
            if why:
                row["why"] = why
            out[into if why else key].append(row)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--runs", type=int, default=5, help="MPI launches per rank count")
    p.add_argument("--gloo-runs", type=int, default=2, help="gloo launches per rank count")
    p.add_argument("--iters", type=int, default=300, help="timed calls per latency point")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--loop-iters", type=int, default=250, help="iterations of each loop")
    p.add_argument("--work-us", type=float, nargs="+", default=[1000.0, 4000.0, 12500.0],
                   help="the fixed unit of Python work per loop iteration (us)")
    p.add_argument("--backends", nargs="+", default=["mpi", "gloo"], choices=["gloo", "mpi"])
    p.add_argument("--loop-backends", nargs="+", default=["mpi"], choices=["gloo", "mpi"])
    p.add_argument("--squeeze", type=int, default=0, metavar="K",
                   help="also run the largest rank count on K cores, unpinned (excluded)")
    p.add_argument("--mpirun-args", default=MPIRUN_ARGS)
    p.add_argument("--cpus", type=lambda s: [int(c) for c in s.split(",") if c], default=[],
                   help=argparse.SUPPRESS)
    p.add_argument("--cores", choices=["sys", "probe"], default="sys",
                   help="one CPU per physical core as /sys tells (sys), or CPUs found by "
                        "running them that slow none of the others down (probe)")
    p.add_argument("--mpi", action="store_true", help="this process is an MPI rank")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--merge", nargs="+", default=None, metavar="FILE",
                   help="combine these runs' files into --json instead of measuring")
    p.add_argument("--source", default=None, help="with --merge: what was run where (info)")
    args = p.parse_args(argv)
    if args.merge:
        out = merge(args.merge)
        if args.source:
            out["info"]["source"] = args.source
        _write(out, args.json)
        return 0
    if args.mpi:
        if not _has_mpi4py():
            print("MPI part skipped: mpi4py is not installed")
            return 0
        comm = MpiComm()
        worker_setup(comm.rank, args.cpus)
        res = run_rank(comm, args)
        if res is not None and args.json:
            with open(args.json, "w") as f:
                json.dump(res, f)
        return 0
    cores = physical_cores()
    probe = None
    if args.cores == "probe":
        cores, probe = independent_cores(cores, max(args.ranks))
        print("cores that run at full speed together:", cores, json.dumps(probe), flush=True)
    info = machine_info(argv, cores)
    if probe is not None:
        info["core_probe"] = {**probe, "chosen": cores}
    print("host-object collectives:", json.dumps(info), flush=True)
    out = {"schema": 2, "info": info, "latency": [], "jitter": [], "excluded": [],
           "skipped": []}
    plan = [(b, n, r, cores[:n], "") for b in args.backends for n in args.ranks
            for r in range(args.runs if b == "mpi" else args.gloo_runs)]
    if args.squeeze:
        why = (f"oversubscribed on purpose: {max(args.ranks)} ranks on {args.squeeze} cores, "
               f"unpinned (the host's scheduler, not a deployment: kept out of the prices)")
        plan += [("mpi", max(args.ranks), r, [], why) for r in range(min(args.runs, 2))]
    for backend, n, run, cpus, why in plan:
        skip = mpi_available() if backend == "mpi" else None
        if skip is None and not why and n > len(cores):
            skip = f"{n} ranks > {len(cores)} physical cores (no oversubscription)"
        if skip is not None:
            if f"{backend}: {skip}" not in out["skipped"]:
                out["skipped"].append(f"{backend}: {skip}")
                print(f"{backend} n={n} skipped: {skip}", flush=True)
            continue
        args.cpus = cpus
        if why and hasattr(os, "sched_setaffinity"):
            mask = os.sched_getaffinity(0)
            os.sched_setaffinity(0, set(cores[:args.squeeze]))   # mpirun's ranks inherit it
        try:
            res = _launch(backend, n, args)
        finally:
            if why and hasattr(os, "sched_setaffinity"):
                os.sched_setaffinity(0, mask)
        if res is None:
            out["skipped"].append(f"{backend} n={n} run {run}: failed")
            continue
        for row in res["latency"] + res["jitter"]:
            row["cpus"] = cpus
        _print(res, f"{backend} n={n:2d} run {run}{' (excluded)' if why else ''}")
        _record(out, res, run, bool(cpus), "excluded", why)
        _write(out, args.json)
    out["python_poll_s_per_request_iter"] = transceiver_poll_loop_cost()
    info["loadavg_after"] = os.getloadavg()
    _write(classify(out), args.json)
    if args.json:
        print(f"wrote {args.json}")
    return 0


HELD = 0.15      # a priced launch's median unit ran within this share of its calibrated time
TWO_SPEEDS = 1.5    # ... and no tenth of its rank-iterations this factor faster or slower


def _strays(row: dict) -> str:
    """Why a loop's unit did not hold its calibration ('' when it did): the median more than
    ``HELD`` off the target, or the fastest or slowest tenth a factor ``TWO_SPEEDS`` off it --
    a core at another speed for a tenth of the run (a shared physical core runs the unit at
    about half speed)."""
    target, w = row["work_us_target"], row["work"]
    if abs(w["p50_us"] / target - 1) > HELD or w["p10_us"] * TWO_SPEEDS < target \
            or w["p90_us"] > TWO_SPEEDS * target:
        return (f"cores of two speeds: the unit of {target:.0f} us ran at p10 "
                f"{w['p10_us']:.0f} / p50 {w['p50_us']:.0f} / p90 {w['p90_us']:.0f} us")
    return ""


def classify(out: dict) -> dict:
    """Move every launch that is not a deployment's measurement under ``excluded``, with why.

    Kept: pinned ranks, none oversubscribed, and in every loop of the launch the unit held its
    calibration (``_strays``). A unit that ran at two speeds -- across the ranks or for a
    stretch of the run -- had cores shared at the hypervisor (vCPUs on one physical core, or
    another tenant on its sibling, which a guest's topology does not show): that spread is the
    host's placement, not the work's, and a deployment's dedicated cores do not have it."""
    launches: dict[tuple, list[dict]] = {}
    for row in out["jitter"]:
        launches.setdefault((row["backend"], row["ranks"], row.get("run", 0)), []).append(row)
    out["jitter"] = []
    for rows in launches.values():
        why = "" if rows[0].get("pinned") else "ranks not pinned"
        why = why or next((w for w in map(_strays, rows) if w), "")
        out["excluded" if why else "jitter"] += [{**r, "why": why} if why else r for r in rows]
    return out


def merge(paths: list[str]) -> dict:
    """One file from several runs of this script (each keeps its command in ``info.runs``)."""
    parts = []
    for path in paths:
        with open(path) as f:
            parts.append(json.load(f))
    out = {**parts[0], "info": {**parts[0]["info"], "runs": [p["info"] for p in parts]}}
    for key in ("latency", "jitter", "excluded", "skipped"):
        out[key] = [row for p in parts for row in p.get(key, [])]
    polls = [p["python_poll_s_per_request_iter"] for p in parts
             if "python_poll_s_per_request_iter" in p]
    if polls:
        out["python_poll_s_per_request_iter"] = polls[0]
    return classify(out)


def _write(out: dict, path: str | None) -> None:
    """The results so far (each launch adds its rows: a run cut short keeps what it did); one
    row a line, quantiles to 5 digits, so the file reads and diffs."""
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    parts = []
    for key, value in out.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows = ",\n  ".join(json.dumps(_rounded(v)) for v in value)
            parts.append(f"{json.dumps(key)}: [\n  {rows}]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value)}")
    with open(path, "w") as f:
        f.write("{" + ",\n".join(parts) + "}\n")


def _rounded(row: dict) -> dict:
    return {k: [round(q, 5) for q in v] if k == "relative_quantiles" else v
            for k, v in row.items()}


if __name__ == "__main__":
    sys.exit(main())
