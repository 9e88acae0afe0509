"""Process backend figures (DESIGN 6): guard overhead, time to a report, spawn-to-ready.

1. Guard overhead: 8 gloo ranks (tp4 x pp2) each run iterations of a small tp_allgather and
   pp_allgather of host objects. Timed inside the ranks (barrier, loop, barrier), median over
   repeats, all variants in one run: trtsim strict, trtsim off, plain torch.distributed
   all_gather_object on the same groups, and the plain program under
   TORCH_DISTRIBUTED_DEBUG=DETAIL, and trtsim strict writing call logs (``log_dir``).
   Ratios are to trtsim off.
2. Time to report: the wall time from the moment the last rank enters its final (blocking)
   call to the moment the launcher returns the report, for a deadlock (cross-group cycle,
   found by the monitor) and a mismatch (a skipped pp_allgather, found in the pre-check).
3. Spawn-to-ready: launcher start to every rank initialised (process group and every group
   built), for 4, 8 and 16 ranks, with the fork server cold and warm.

    python benchmarks/bench_process.py [--iterations N] [--repeat R] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import tempfile
import time
from datetime import timedelta

import torch
import torch.distributed as tdist

import trtsim
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.layout import InstanceLayout


# -- 1. guard overhead --------------------------------------------------------------------
def trtsim_gathers(dist, iterations):
    dist.barrier()
    t0 = time.perf_counter()
    for it in range(iterations):
        dist.set_iteration(it)
        dist.tp_allgather({"rank": dist.rank, "it": it}, label="tp_state")
        dist.pp_allgather([dist.rank, it], label="pp_state")
    dist.barrier()
    return time.perf_counter() - t0


def _plain_rank(rank, world, port, iterations, detail, out):
    if detail:
        os.environ["TORCH_DISTRIBUTED_DEBUG"] = "DETAIL"
    store = tdist.TCPStore("127.0.0.1", port, world, False, timeout=timedelta(seconds=60))
    tdist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    m = trtsim.Mapping(world_size=world, rank=rank, tp_size=4, pp_size=2)
    groups = {}
    for kind in ("tp", "pp"):
        for base in range(world):
            ranks = getattr(m.with_rank(base), f"{kind}_group")
            key = (kind, tuple(ranks))
            if key not in groups:
                groups[key] = tdist.new_group(ranks)
    tp = groups[("tp", tuple(m.tp_group))]
    pp = groups[("pp", tuple(m.pp_group))]
    tdist.barrier()
    t0 = time.perf_counter()
    for it in range(iterations):
        buf = [None] * 4
        tdist.all_gather_object(buf, {"rank": rank, "it": it}, group=tp)
        buf = [None] * 2
        tdist.all_gather_object(buf, [rank, it], group=pp)
    tdist.barrier()
    out.put((rank, time.perf_counter() - t0))
    tdist.destroy_process_group()


def plain_torch(iterations, detail):
    ctx = mp.get_context("forkserver")
    store = tdist.TCPStore("127.0.0.1", 0, 9, True, wait_for_workers=False)
    out = ctx.Queue()
    procs = [ctx.Process(target=_plain_rank, args=(r, 8, store.port, iterations, detail, out))
             for r in range(8)]
    for p in procs:
        p.start()
    times = [out.get(timeout=300)[1] for _ in procs]
    for p in procs:
        p.join()
    return max(times)


def trtsim_time(iterations, guard, log=False):
    with tempfile.TemporaryDirectory() as logs:
        res = trtsim.launch(trtsim_gathers, tp=4, pp=2, backend="gloo", guard=guard,
                            args=(iterations,), timeout=600, log_dir=logs if log else None)
    return max(res)


def guard_overhead(iterations, repeat):
    variants = {
        "trtsim guard=off": lambda: trtsim_time(iterations, "off"),
        "trtsim guard=strict": lambda: trtsim_time(iterations, "strict"),
        "trtsim guard=strict, log_dir": lambda: trtsim_time(iterations, "strict", log=True),
        "torch.distributed (plain)": lambda: plain_torch(iterations, False),
        "torch.distributed DEBUG=DETAIL": lambda: plain_torch(iterations, True),
    }
    samples = {k: [] for k in variants}
    for _ in range(repeat):           # interleave variants so drift hits all alike
        for name, fn in variants.items():
            samples[name].append(fn())
    return {k: statistics.median(v) for k, v in samples.items()}


# -- 2. time to report --------------------------------------------------------------------
def _stamp(path, rank):
    with open(os.path.join(path, f"t{rank}"), "w") as f:
        f.write(repr(time.monotonic()))


def cycle_program(dist, path):
    order = ("pp", "tp") if dist.rank in (0, 3) else ("tp", "pp")
    time.sleep(0.05 * dist.rank)        # stagger: the last rank blocks last
    _stamp(path, dist.rank)
    for kind in order:
        getattr(dist, f"{kind}_allgather")(dist.rank, label=kind)


def skip_program(dist, path):
    for it in range(3):
        dist.set_iteration(it)
        if not (dist.rank == 2 and it == 1):
            if dist.rank in (0, 2) and it >= 1:
                _stamp(path, dist.rank)
            dist.pp_allgather(dist.rank, label="gen_consensus")


def time_to_report(program, repeat):
    lat = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as path:
            spec = trtsim.InstanceSpec(tp_size=2, pp_size=2)
            out = run_ranks([InstanceLayout("", "", spec)], program, (path,),
                            LaunchConfig("gloo", "strict", 0, 60))
            done = time.monotonic()
            assert out.error is not None, "expected a report"
            stamps = [float(open(os.path.join(path, f)).read()) for f in os.listdir(path)]
            lat.append(done - max(stamps))
    return statistics.median(lat), max(lat)


# -- 3. spawn-to-ready --------------------------------------------------------------------
def noop(dist):
    return None


def spawn_to_ready(world):
    spec = trtsim.InstanceSpec(tp_size=world // 2, pp_size=2)
    out = run_ranks([InstanceLayout("", "", spec)], noop, (), LaunchConfig("gloo", "off", 0, 300))
    return max(e["ready_s"] for e in out.extras)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    report = {"machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores",
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    cold = spawn_to_ready(4)         # first launch starts the fork server
    report["spawn_to_ready_s"] = {"4 (cold server)": cold, **{
        str(n): statistics.median(spawn_to_ready(n) for _ in range(3)) for n in (4, 8, 16)}}
    report["guard_overhead_s"] = guard_overhead(args.iterations, args.repeat)
    report["time_to_report_s"] = {
        "deadlock (cycle, monitor)": time_to_report(cycle_program, args.repeat),
        "mismatch (skip, pre-check)": time_to_report(skip_program, args.repeat)}
    base = report["guard_overhead_s"]["trtsim guard=off"]
    print(f"# {report['machine']}, torch {report['torch']}, {report['date']}")
    print(f"guard overhead: 8 gloo ranks (tp4 pp2), {args.iterations} iterations of "
          f"tp_allgather + pp_allgather, median of {args.repeat}")
    for name, t in report["guard_overhead_s"].items():
        print(f"  {name:<32} {t * 1e3:8.1f} ms  {t / base:5.2f}x  "
              f"{t / (2 * args.iterations) * 1e6:7.0f} us/collective")
    print("time from the last rank blocking to the report (median, max):")
    for name, (med, worst) in report["time_to_report_s"].items():
        print(f"  {name:<32} {med * 1e3:8.1f} ms  {worst * 1e3:8.1f} ms")
    print("spawn-to-ready:")
    for n, t in report["spawn_to_ready_s"].items():
        print(f"  {n:>16} ranks {t:6.2f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
