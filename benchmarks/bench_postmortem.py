"""Post-mortem speed (DESIGN 6: analyze 64 ranks' dumps in <= 2 s, replay in <= 1 s), and the
comparison with PyTorch's own analyzer on the suite's six shapes (docs/POSTMORTEM.md).

Speed. A real hung gloo job of 64 ranks (tp 8 x pp 8: every iteration a TP all-reduce and a
PP all-gather, from two functions; ranks forked from one process that imported torch once)
runs ``--iterations`` iterations, enough to wrap the Flight Recorder's ring of 2,000 entries.
Near the end rank 37 skips one TP all-reduce: its later ones pair one early, silently, and
its TP peers are left in their last one while every other rank waits in the final world
barrier. Each rank's dump is written while the job hangs. Then, timed: reading and judging
the 64 dumps (``load_job`` + ``analyze``), building the replay and running it on inproc,
each in this process (median of ``--repeat``), and both commands end to end.

    python benchmarks/bench_postmortem.py [--dumps DIR] [--iterations N] [--repeat R]
    python benchmarks/bench_postmortem.py --compare [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS, TP, SKIPPER = 64, 8, 37
PREFIX = "comm_lib_trace_rank_"


def _tp_step(tdist, groups, t):
    tdist.all_reduce(t, group=groups["tp"])


def _pp_step(tdist, groups, t):
    out = [t.new_empty(t.shape) for _ in range(RANKS // TP)]
    tdist.all_gather(out, t, group=groups["pp"])


def _rank(rank, port, iterations, out_dir, ready, dump_now):
    import threading
    from datetime import timedelta

    import torch
    import torch.distributed as tdist
    torch.set_num_threads(1)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                             world_size=RANKS, timeout=timedelta(seconds=600))
    groups = {}
    for i in range(RANKS // TP):                 # every rank makes every group, in one order
        g = tdist.new_group(list(range(i * TP, (i + 1) * TP)))
        if rank // TP == i:
            groups["tp"] = g
    for i in range(TP):
        g = tdist.new_group(list(range(i, RANKS, TP)))
        if rank % TP == i:
            groups["pp"] = g

    def dump():
        dump_now.wait()
        data = torch._C._distributed_c10d._dump_fr_trace(True, True, False)
        with open(os.path.join(out_dir, f"{PREFIX}{rank}"), "wb") as f:
            f.write(data)
        ready.put(("dumped", rank))
        time.sleep(600)
    threading.Thread(target=dump, daemon=True).start()
    sys.stderr = open(os.devnull, "w")            # peers killed at the end: socket errors
    t = torch.ones(16)
    for it in range(iterations):
        if it == iterations - 25:
            ready.put(("near the end", rank))
        if not (rank == SKIPPER and it == iterations - 20):
            _tp_step(tdist, groups, t)
        _pp_step(tdist, groups, t[:4])
    tdist.barrier()
    time.sleep(600)


def make_dumps(out_dir: str, iterations: int) -> float:
    """The 64 dumps of one hung job; returns the seconds it took."""
    import multiprocessing as mp
    import socket
    import torch.distributed  # noqa: F401 - imported once, before the ranks are forked
    os.makedirs(out_dir, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("fork")
    ready, dump_now = ctx.Queue(), ctx.Event()
    t0 = time.perf_counter()
    os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
    procs = [ctx.Process(target=_rank, args=(r, port, iterations, out_dir, ready, dump_now),
                         daemon=True) for r in range(RANKS)]
    for p in procs:
        p.start()
    try:
        for _ in range(RANKS):
            ready.get(timeout=1800)               # every rank is 25 iterations from the end
        time.sleep(10.0)                          # ... and then hangs
        dump_now.set()
        for _ in range(RANKS):
            ready.get(timeout=600)
    finally:
        for p in procs:
            p.kill()
            p.join()
    return time.perf_counter() - t0


def _median(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times), value


def speed(dumps: str, repeat: int) -> None:
    sys.path.insert(0, ROOT)
    from trtsim.jobs.replay_job import run_replay
    from trtsim.postmortem.analysis import analyze
    from trtsim.postmortem.inputs import load_job
    from trtsim.postmortem.replay import build_replay, replay_text
    med, worst, analysis = _median(lambda: analyze(load_job([dumps])), repeat)
    entries = analysis.calls
    print(f"analyze (read + align + judge): {RANKS} ranks, {entries:,} entries: median "
          f"{med:.3f} s, max {worst:.3f} s; verdict {analysis.verdict}")
    replay = build_replay(analysis)
    run_replay(replay)                            # warm: the first run imports the backend
    med, worst, result = _median(lambda: run_replay(replay), repeat)
    print(f"replay on inproc: {replay.calls} calls: median {med:.3f} s, max {worst:.3f} s; "
          f"reproduced {result.reproduced}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "replay.yaml")
        with open(path, "w") as f:
            f.write(replay_text(replay))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        for what, argv in (("trtsim analyze DIR", ["analyze", dumps]),
                           ("trtsim run REPLAY", ["run", path])):
            t0 = time.perf_counter()
            code = subprocess.call([sys.executable, "-m", "trtsim", *argv], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"{what}: {time.perf_counter() - t0:.2f} s end to end (python start and "
                  f"imports included), exit {code}")
    print()
    print(analysis.summary().split("\nCollective")[0])
    print(str(analysis.error).splitlines()[0] if analysis.error else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dumps", help="the 64 dumps (made there first when the folder is empty)")
    ap.add_argument("--iterations", type=int, default=1100)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--compare", action="store_true",
                    help="run trtsim analyze and PyTorch's analyzer on the six shapes")
    ap.add_argument("--out", help="with --compare: where the shapes' dumps go")
    args = ap.parse_args()
    print(f"# {platform.node()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"torch {__import__('torch').__version__}, {time.strftime('%Y-%m-%d')}")
    if args.compare:
        sys.path.insert(0, ROOT)
        from benchmarks.compare_fr_trace import compare
        compare(args.out or tempfile.mkdtemp(prefix="trtsim_shapes_"))
        return
    dumps = args.dumps or os.path.join(tempfile.gettempdir(), "trtsim_bench_postmortem_64")
    if not (os.path.isdir(dumps) and len(os.listdir(dumps)) >= RANKS):
        print(f"making the dumps of a hung {RANKS}-rank gloo job in {dumps} ...", flush=True)
        print(f"  {make_dumps(dumps, args.iterations):.0f} s")
    speed(dumps, args.repeat)


if __name__ == "__main__":
    main()
