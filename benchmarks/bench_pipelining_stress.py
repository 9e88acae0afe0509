"""Legal pipelining schedules under the guard, on a loaded machine: zero reports expected.

torch.distributed.pipelining's GPipe, 1F1B and Interleaved1F1B schedules (4 ranks, gloo,
``trtsim.launch(..., backend="gloo", intercept=("torch",))``), run one after another in turn
while ``--busy`` processes spin on the cores. Every run is legal code, so every report
(CollectiveDeadlock, CollectiveMismatch, RankFailed, CollectiveTimeout) is a false positive;
the figure is the number of reports in ``--runs`` runs. The schedules' metadata exchange
(``send_object_list``/``recv_object_list`` between neighbouring stages) is where a sender
still shown blocked in a send its receiver had already taken once read as a wait cycle.

    python benchmarks/bench_pipelining_stress.py [--runs 200] [--busy 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import torch
import torch.distributed as tdist
from torch import nn

import trtsim

SCHEDULES = ("GPipe", "1F1B", "Interleaved1F1B")
WIDTH, BATCH, MICROBATCHES = 16, 8, 4


def pipeline(dist, schedule: str) -> float | None:
    """One training step of a small MLP split into pipeline stages (plain torch code)."""
    from torch.distributed import pipelining as pp
    if not tdist.is_initialized():
        tdist.init_process_group("gloo")
    rank, world = tdist.get_rank(), tdist.get_world_size()
    per_rank = 2 if schedule == "Interleaved1F1B" else 1
    num_stages = world * per_rank
    torch.manual_seed(0)
    layers = nn.Sequential(*[nn.Linear(WIDTH, WIDTH) for _ in range(num_stages)])
    x, y = torch.randn(BATCH, WIDTH), torch.randn(BATCH, WIDTH)
    stages = [pp.PipelineStage(layers[i], i, num_stages, torch.device("cpu"))
              for i in range(rank, num_stages, world)]
    loss_fn = nn.MSELoss()
    if schedule == "GPipe":
        sched = pp.ScheduleGPipe(stages[0], MICROBATCHES, loss_fn=loss_fn)
    elif schedule == "1F1B":
        sched = pp.Schedule1F1B(stages[0], MICROBATCHES, loss_fn=loss_fn)
    else:
        sched = pp.ScheduleInterleaved1F1B(stages, MICROBATCHES, loss_fn=loss_fn)
    losses: list = []
    if rank == 0:
        sched.step(x)
    elif rank == world - 1:
        sched.step(target=y, losses=losses)
    else:
        sched.step()
    return float(sum(float(v.detach()) for v in losses)) if losses else None


def _busy(n: int) -> list[subprocess.Popen]:
    """``n`` processes that spin until ended (the load the schedules run under)."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    spinners = _busy(a.busy)
    reports: list[dict] = []
    times: dict[str, list[float]] = {s: [] for s in SCHEDULES}
    losses: dict[str, set] = {s: set() for s in SCHEDULES}
    t_start = time.perf_counter()
    try:
        for i in range(a.runs):
            schedule = SCHEDULES[i % len(SCHEDULES)]
            t0 = time.perf_counter()
            try:
                res = trtsim.launch(pipeline, tp=4, backend="gloo", intercept=("torch",),
                                    args=(schedule,), timeout=a.timeout)
                losses[schedule].add(round(res[3], 6))
            except Exception as exc:  # noqa: BLE001 - every report is the figure
                reports.append({"run": i, "schedule": schedule, "type": type(exc).__name__,
                                "report": str(exc).splitlines()[0]})
                print(f"run {i} {schedule}: {type(exc).__name__}: {exc}", flush=True)
            times[schedule].append(time.perf_counter() - t0)
            print(f"run {i} {schedule}: {len(reports)} reports so far, "
                  f"{times[schedule][-1]:.1f} s", flush=True)
            if (i + 1) % 10 == 0:
                print(f"{i + 1}/{a.runs} runs, {len(reports)} reports, "
                      f"{time.perf_counter() - t_start:.0f} s", flush=True)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    runs = sum(len(v) for v in times.values())
    out = {"runs": runs, "reports": len(reports), "report_list": reports,
           "busy": a.busy, "cores": os.cpu_count(), "machine": platform.platform(),
           "seconds": round(time.perf_counter() - t_start, 1),
           "median_s": {s: round(sorted(v)[len(v) // 2], 2) for s, v in times.items() if v},
           "distinct_losses": {s: sorted(v) for s, v in losses.items()}}
    print(json.dumps(out, indent=1))
    if a.json:
        from trtsim.safe_write import write_text
        write_text(a.json, json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
