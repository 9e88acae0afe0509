"""Flight Recorder dumps written by hand, in the format torch 2.13 writes (DESIGN 8): small jobs
whose every field a test chooses, for inputs no real run makes (hostile, fuzzed, edge cases).
The real dumps of hung gloo runs are ``postmortem_shapes``'s."""

from __future__ import annotations

import json
import os
import pickle

PREFIX = "comm_lib_trace_rank_"
TORCH_FILE = "/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py"


def frames(function: str = "step", line: int = 7, filename: str = "/job/prog.py") -> list:
    """A recorded stack, innermost first: torch's all_reduce called from ``function``."""
    return [{"name": "all_reduce", "filename": TORCH_FILE, "line": 2500},
            {"name": function, "filename": filename, "line": line},
            {"name": "main", "filename": filename, "line": 40}]


def entry(seq: int, op: str = "all_reduce", pg: str = "0", desc: str = "default_pg",
          retired: bool = True, record_id: int | None = None, stack: list | None = None,
          sizes=((4,),), **extra) -> dict:
    """One entry as the recorder writes it (the fields a post-mortem reads, and a few more)."""
    out = {"record_id": seq - 1 if record_id is None else record_id, "pg_id": 0,
           "process_group": (pg, desc), "collective_seq_id": seq, "p2p_seq_id": 0,
           "op_id": seq, "profiling_name": f"gloo:{op}",
           "input_sizes": [list(s) for s in sizes], "input_dtypes": ["Float"] * len(sizes),
           "output_sizes": [list(s) for s in sizes], "output_dtypes": ["Float"] * len(sizes),
           "state": "completed" if retired else "scheduled", "time_created_ns": 1000 * seq,
           "retired": retired, "timeout_ms": 60000, "is_p2p": False,
           "frames": frames() if stack is None else stack}
    out.update(extra)
    return out


def dump(entries: list, world: int | None = None, version: str = "2.10", **extra) -> dict:
    """One rank's dump; ``world`` ranks named in the default group's ``pg_config`` (as NCCL
    writes it), or none (as gloo writes it)."""
    config = {"0": {"name": "0", "desc": "default_pg",
                    "ranks": json.dumps(list(range(world))) if world else "[]"}}
    out = {"version": version, "pg_config": config, "pg_status": {}, "comm_lib_version": "2.21",
           "entries": entries}
    out.update(extra)
    return out


def write(folder, rank: int, doc, name: str | None = None) -> str:
    """``doc`` pickled as rank ``rank``'s dump in ``folder``; returns its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name or f"{PREFIX}{rank}")
    with open(path, "wb") as f:
        f.write(doc if isinstance(doc, bytes) else pickle.dumps(doc, protocol=2))
    return path


def consistent_job(folder, world: int = 2, calls: int = 3) -> list[str]:
    """A job whose ranks all made the same ``calls`` reductions, every one returned."""
    return [write(folder, r, dump([entry(s) for s in range(1, calls + 1)], world))
            for r in range(world)]


def skip_job(folder, iterations: int = 3, skipper: int = 1, prefix: str = PREFIX) -> list[str]:
    """Two ranks reduce once per iteration from ``step``, then once from ``final``; rank
    ``skipper`` skipped one step: its final reduction paired silently with the other's last
    step, and the other's final one waits for ever."""
    step, final = frames("step", 7), frames("final", 9)
    out = []
    for rank in (0, 1):
        steps = iterations - (rank == skipper)
        calls = [entry(s, stack=step) for s in range(1, steps + 1)]
        calls.append(entry(steps + 1, stack=final, retired=rank == skipper))
        out.append(write(folder, rank, dump(calls, 2), f"{prefix}{rank}"))
    return out

DEEP = "__deep__"


def with_deep(doc, depth: int = 100_000, kind: bytes = b"l") -> bytes:
    """``doc`` pickled with every ``DEEP`` string replaced by lists (``kind`` ``t``: tuples)
    nested ``depth`` deep: what a hostile pickle holds, which ``pickle.dumps`` cannot make
    (it recurses)."""
    data = pickle.dumps(doc, protocol=2)
    marker = pickle.dumps(DEEP, protocol=2)[2:-1]           # the string's opcode alone
    marker = marker[:marker.index(DEEP.encode()) + len(DEEP)]
    return data.replace(marker, b"(" * depth + kind * depth)


def call_log(rank: int, world: int, **changes) -> dict:
    """A trtsim call log (``calls.call_log_format``) of a rank that entered no call and returned."""
    from trtsim.calls.call_log_format import CALL_LOG_FORMAT, CALL_LOG_VERSION, FIELDS
    doc = {"format": CALL_LOG_FORMAT, "version": CALL_LOG_VERSION, "rank": rank,
           "launch": "synthetic", "started_ns": 1,
           "name": f"rank {rank}", "world_size": world, "layout": [["", "", world, 1, 1, False]],
           "written_on": "exit", "status": "done", "iteration": 0, "pending_sends": [],
           "failure": "", "traceback": "", "dropped": 0, "fields": list(FIELDS), "calls": []}
    doc.update(changes)
    return doc


def write_text(folder, name: str, text: str) -> str:
    """``text`` as ``folder/name``; returns its path."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path
