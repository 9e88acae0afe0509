"""trtsim's own call logs from real gloo runs (``launch(..., log_dir=...)``), made once per
session: each run's folder of logs, and the live guard's report of the run beside it."""

from __future__ import annotations

import glob
import os
import pickle
import threading
import time

import trtsim
from tests import postmortem_shapes, programs


def raising_late(dist, log_dir: str):
    """Rank 1 raises once the other TP pair has finished (their call logs, written as they
    leave, are there): rank 0 is left blocked in its second gather, ranks 2 and 3 are done
    (the launcher reports a failure at once, so without the wait the teardown could catch
    them mid-call)."""
    dist.tp_allgather(0, label="a")
    if dist.rank == 1:
        # one launch per folder here: each log's name ends in its rank
        def written(r: int) -> bool:
            return bool(glob.glob(os.path.join(log_dir, f"trtsim_calls_*rank{r}.json")))
        tick, deadline = threading.Event(), time.monotonic() + 60     # a hang guard only
        while not (written(2) and written(3)) and time.monotonic() < deadline:
            tick.wait(0.02)
        raise RuntimeError("boom on rank 1")
    dist.tp_allgather(1, label="b")


def deployment_skip(dist):
    """Generation rank 1 of a ctx + gen deployment skips its TP gather of iteration 1."""
    for it in range(3):
        dist.set_iteration(it)
        if not (dist.role == "gen" and dist.rank == 1 and it == 1):
            dist.tp_allgather(dist.rank, label="state")


# run name -> (program, launch keywords)
RUNS = {
    "skip": (programs.skip_pp_allgather, dict(tp=2, pp=2)),
    "skip_guard_off": (programs.skip_pp_allgather, dict(tp=2, pp=2, guard="off")),
    "op_mismatch": (programs.op_mismatch, dict(tp=2)),
    "root_mismatch": (programs.root_mismatch, dict(tp=2)),
    "p2p_tag_mismatch": (programs.p2p_tag_mismatch, dict(tp=2, pp=2)),
    "cross_group_cycle": (programs.cross_group_cycle, dict(tp=2, pp=2)),
    "early_exit": (programs.early_exit, dict(tp=2)),
    "raising_rank": (raising_late, dict(tp=2, pp=2)),
    "torch_p2p_tag_mismatch": (postmortem_shapes.p2p_tag_mismatch,
                               dict(tp=2, intercept=("torch",))),
    "deployment_skip": (deployment_skip, dict(deployment="tp2_pp1")),
}


def live_path(root: str, run: str) -> str:
    return os.path.join(root, f"{run}.live")


def live(root: str, run: str):
    """The report the run raised (None: it held)."""
    with open(live_path(root, run), "rb") as f:
        return pickle.load(f)


def suite_logs(root: str) -> str:
    """Every run of ``RUNS`` on gloo, its logs in ``root/<run>`` (once per session)."""
    from filelock import FileLock
    os.makedirs(root, exist_ok=True)
    with FileLock(os.path.join(root, ".lock")):
        done = os.path.join(root, ".done")
        if not os.path.exists(done):
            for run, (program, kw) in RUNS.items():
                err = None
                log_dir = os.path.join(root, run)
                if program is raising_late:
                    kw = dict(kw, args=(log_dir,))
                try:
                    trtsim.launch(program, backend="gloo", timeout=30, log_dir=log_dir, **kw)
                except trtsim.CollectiveError as exc:
                    err = exc
                with open(live_path(root, run), "wb") as f:
                    pickle.dump(err, f)
            open(done, "w").close()
    return root
