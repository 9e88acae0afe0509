"""Six ways a job hangs, as plain torch.distributed programs, and a runner that makes real
PyTorch Flight Recorder dumps of them from hung gloo runs (DESIGN 8).

Each program knows nothing of trtsim. ``make_runs`` forks one process per rank (env://, with
``TORCH_FR_BUFFER_SIZE``); once a rank's recorder shows where the hang leaves it (``FINAL``), a
watcher thread dumps its ring buffer while the hung ranks still block in gloo: the pickle to
``<prefix><rank>`` (PyTorch's name), the JSON to ``<prefix><rank>.json``. The same programs
under ``trtsim.launch(..., intercept=("torch",))`` give the live guard's report to compare.

The p2p tag mismatch is here too, though gloo records no p2p op: its dumps show what a
Flight Recorder cannot see; trtsim's own call logs cover it (``programs.p2p_tag_mismatch``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as tdist

PREFIX = "comm_lib_trace_rank_"


# -- the programs (rank from torch.distributed; groups made by every rank) -------------------
def _init():
    """What a torchrun script does first (trtsim's interception joins its launch's world)."""
    if not tdist.is_initialized():
        tdist.init_process_group("gloo")


def _step(t):
    out = [torch.empty_like(t) for _ in range(tdist.get_world_size())]
    tdist.all_gather(out, t)


def _final(t):
    out = [torch.empty_like(t) for _ in range(tdist.get_world_size())]
    tdist.all_gather(out, t)


def skip_pair():
    """Rank 1 skips the step gather of iteration 1: its final gather pairs with rank 0's
    last step, silently, and rank 0's final gather waits for ever."""
    _init()
    rank = tdist.get_rank()
    tdist.all_reduce(torch.ones(2))
    for i in range(3):
        if rank == 1 and i == 1:
            continue
        _step(torch.full((4,), float(i)))
    _final(torch.full((4,), 99.0))


def op_mismatch():
    """Same position, different op: rank 0 reduces, rank 1 gathers."""
    _init()
    tdist.all_reduce(torch.ones(2))
    t = torch.ones(4)
    if tdist.get_rank() == 0:
        tdist.all_reduce(t)
    else:
        tdist.all_gather([torch.empty(4) for _ in range(2)], t)


def root_mismatch():
    """Each rank believes it is the gather's root (dst computed from a rank-local value)."""
    _init()
    rank = tdist.get_rank()
    tdist.all_reduce(torch.ones(2))
    root = rank                            # the bug: the root should be the same everywhere
    tdist.gather(torch.ones(4), [torch.empty(4) for _ in range(2)], dst=root)


def cross_group_cycle():
    """Three pair groups entered in a rotated order: 0 waits for 1, 1 for 2, 2 for 0. Each
    group is used once by both its members first (gloo's dumps name no group's members:
    the ranks that use a group are its members)."""
    _init()
    rank = tdist.get_rank()
    groups = {pair: tdist.new_group(list(pair)) for pair in ((0, 1), (1, 2), (0, 2))}
    tdist.all_reduce(torch.ones(2))
    for pair, group in groups.items():
        if rank in pair:
            tdist.all_reduce(torch.ones(1), group=group)
    order = {0: ((0, 1), (0, 2)), 1: ((1, 2), (0, 1)), 2: ((0, 2), (1, 2))}[rank]
    for pair in order:
        tdist.all_reduce(torch.ones(3), group=groups[pair])


def early_exit():
    """The last rank returns before the final reduction."""
    _init()
    tdist.all_reduce(torch.ones(2))
    if tdist.get_rank() == tdist.get_world_size() - 1:
        return
    tdist.all_reduce(torch.ones(2))


def p2p_tag_mismatch():
    """Rank 0 sends with tag 1, rank 1 receives with tag 2; both then wait for ever."""
    _init()
    tdist.all_reduce(torch.ones(2))
    if tdist.get_rank() == 0:
        tdist.send(torch.ones(3), dst=1, tag=1)
    else:
        tdist.recv(torch.empty(3), src=0, tag=2)
    tdist.all_reduce(torch.ones(2))


SHAPES = {"skip_pair": 2, "op_mismatch": 2, "root_mismatch": 2, "cross_group_cycle": 3,
          "early_exit": 2, "p2p_tag_mismatch": 2}
# Where each rank of a shape ends: (entries it recorded, entries still in flight). A rank dumps
# once its recorder shows that state, so a dump holds the hang, whatever the machine's load
# (gloo retires entries from its own thread, a moment after the call returns).
FINAL = {"skip_pair": ((5, 1), (4, 0)), "op_mismatch": ((2, 1), (2, 1)),
         "root_mismatch": ((2, 1), (2, 1)), "cross_group_cycle": ((4, 1),) * 3,
         "early_exit": ((2, 1), (1, 0)), "p2p_tag_mismatch": ((1, 0), (1, 0))}


# -- the rank side of a dump run -----------------------------------------------------------
def _dump_and_exit(prefix: str, rank: int, world: int) -> None:
    """Dump this rank's ring buffer (pickle and JSON), wait until every rank has dumped (a
    rank that leaves first would break its peers' connections), and end the process."""
    c10d = torch._C._distributed_c10d
    pickled = c10d._dump_fr_trace(True, True, False)   # collectives, stack traces, all
    as_json = c10d._dump_fr_trace_json(True, False)
    for path, data in ((f"{prefix}{rank}", pickled), (f"{prefix}{rank}.json", as_json)):
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
    _wait_for(lambda: all(os.path.exists(f"{prefix}{r}.json") for r in range(world)))
    os._exit(0)


def _wait_for(condition, guard_s: float = 60.0) -> None:
    """Until ``condition()`` holds (re-checked every 20 ms; ``guard_s`` only ends a hang)."""
    tick = threading.Event()
    deadline = time.monotonic() + guard_s
    while not condition() and time.monotonic() < deadline:
        tick.wait(0.02)


def _recorded() -> tuple[int, int]:
    """(entries this rank's recorder made, entries still in flight)."""
    import pickle
    entries = pickle.loads(torch._C._distributed_c10d._dump_fr_trace(True, False, False)).get(
        "entries", [])
    return (entries[-1]["record_id"] + 1 if entries else 0,
            sum(not e["retired"] for e in entries))


def _watch(shape: str, prefix: str, rank: int, world: int) -> None:
    """Dump once the recorder shows where ``shape`` leaves this rank (``FINAL``)."""
    _wait_for(lambda: _recorded() == FINAL[shape][rank])
    _dump_and_exit(prefix, rank, world)


def _rank_main() -> None:
    rank, shape = int(os.environ["RANK"]), os.environ["SHAPE"]
    world = int(os.environ["WORLD_SIZE"])
    prefix = os.environ["TORCH_FR_DUMP_TEMP_FILE"]
    # init_process_group waits for every rank: the programs start together (an explicit
    # barrier would be one more entry in every dump)
    tdist.init_process_group("gloo", timeout=timedelta(seconds=60))
    threading.Thread(target=_watch, args=(shape, prefix, rank, world), daemon=True).start()
    try:
        globals()[shape]()
    except RuntimeError:                   # a peer left after dumping: gloo says so here
        pass
    threading.Event().wait()               # a rank that returned dumps with the others


# -- the launcher side ----------------------------------------------------------------------
# One launcher process imports torch once and forks every rank of every run (a fork of a
# process that made no process group is a clean start for gloo): seventeen rank processes
# that each imported torch cost the suite as much CPU as the runs themselves.
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _fork_rank(shape: str, prefix: str, port: int, rank: int, buffer: int) -> int:
    pid = os.fork()
    if pid == 0:
        try:       # the recorder reads its size at the first process group: after the fork
            os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), SHAPE=shape,
                              WORLD_SIZE=str(SHAPES[shape]), RANK=str(rank),
                              LOCAL_RANK=str(rank), TORCH_FR_BUFFER_SIZE=str(buffer),
                              TORCH_FR_DUMP_TEMP_FILE=prefix, OMP_NUM_THREADS="1")
            _rank_main()
        finally:
            os._exit(1)
    return pid


def _launch(runs: dict[str, tuple[str, int]], timeout: float, at_once: int = 3) -> None:
    """The launcher process: each run ``out_dir -> (shape, buffer)``, ``at_once`` runs at a
    time (2-3 processes each, on a small machine); exits 1 naming what failed."""
    deadline = time.monotonic() + timeout
    todo, running, failed = list(runs.items()), {}, []
    while todo or running:
        while todo and len({run for run, _ in running.values()}) < at_once:
            out_dir, (shape, buffer) = todo.pop(0)
            os.makedirs(out_dir, exist_ok=True)
            port, prefix = _free_port(), os.path.join(out_dir, PREFIX)
            for r in range(SHAPES[shape]):
                running[_fork_rank(shape, prefix, port, r, buffer)] = (out_dir, r)
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            if time.monotonic() > deadline:
                for pid in running:
                    os.kill(pid, 9)
                sys.exit(f"runs past {timeout} s: {sorted(set(running.values()))}")
            time.sleep(0.02)
            continue
        run, rank = running.pop(pid)
        if os.waitstatus_to_exitcode(status) != 0:
            failed.append(f"{run} rank {rank}: status {os.waitstatus_to_exitcode(status)}")
    if failed:
        sys.exit(f"failed: {failed}")


def make_runs(runs: dict[str, tuple[str, int]], timeout: float = 240.0) -> None:
    """Run each ``out_dir -> (shape, buffer)`` on gloo, one process per rank, and dump every
    rank's Flight Recorder (a ring of ``buffer`` entries) into ``out_dir`` while the job
    hangs: the pickle, then the JSON form, per rank."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    job = subprocess.run([sys.executable, "-m", "tests.postmortem_shapes", json.dumps(runs),
                          str(timeout)], env=env, cwd=root, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, timeout=timeout + 60)
    missing = [f for out_dir, (shape, _) in runs.items() for f in _files(out_dir, shape)
               if not os.path.exists(f)]
    if missing or job.returncode != 0:
        raise RuntimeError(f"dumps missing {missing}; launcher status {job.returncode}: "
                           f"{job.stderr.decode(errors='replace')[-4000:]}")


def _files(out_dir: str, shape: str) -> list[str]:
    prefix = os.path.join(out_dir, PREFIX)
    return [f"{prefix}{r}{ext}" for ext in ("", ".json") for r in range(SHAPES[shape])]


def make_dumps(shape: str, out_dir: str, timeout: float = 240.0, buffer: int = 2000
               ) -> list[str]:
    """``make_runs`` of one run; returns its dump files (pickle, then JSON, per rank)."""
    make_runs({out_dir: (shape, buffer)}, timeout)
    return _files(out_dir, shape)


# -- the suite's dumps: made once per session, shared by every xdist worker ----------------
RUNS = {**{shape: (shape, 2000) for shape in SHAPES},
        "skip_pair_truncated": ("skip_pair", 3)}    # ring buffers of 3: uneven truncation


def suite_dumps(root: str) -> str:
    """Every run of ``RUNS`` dumped under ``root/<run>`` (once: a lock and a marker file
    keep parallel workers from making them twice); returns ``root``."""
    from filelock import FileLock
    os.makedirs(root, exist_ok=True)
    with FileLock(os.path.join(root, ".lock")):
        done = os.path.join(root, ".done")
        if not os.path.exists(done):
            make_runs({os.path.join(root, run): shape_buffer
                       for run, shape_buffer in RUNS.items()})
            open(done, "w").close()
    return root


def shared_dir(tmp_path_factory, request, name: str) -> str:
    """A folder every xdist worker of this session sees (the session's base temp's parent
    under xdist), for files made once per session."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if hasattr(request.config, "workerinput") else base
    return os.path.join(str(root), name)


def live_report(shape: str):
    """The live guard's report of ``shape``: the same program under trtsim (inproc)."""
    import trtsim
    try:
        trtsim.launch(globals()[shape], tp=SHAPES[shape], intercept=("torch",), timeout=30)
    except trtsim.CollectiveError as err:
        return err
    return None


if __name__ == "__main__":
    _launch({k: tuple(v) for k, v in json.loads(sys.argv[1]).items()}, float(sys.argv[2]))
