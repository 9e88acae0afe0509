"""Chrome / Perfetto trace files (the JSON ``traceEvents`` format, times in microseconds).

One track per rank (functional runs: compute, collectives, waits, transfers on the virtual
clock) or per server (perf runs: prefill and generation steps). Open in ui.perfetto.dev or
chrome://tracing.
"""

from __future__ import annotations

import json
import os

_CATEGORY = {"compute": "compute", "collective": "collective", "wait": "wait", "p2p": "transfer"}


def rank_trace(timeline: list[list[tuple]], names: list[str] | None = None) -> dict:
    """From per-rank (start, end, kind, label, peer) events."""
    events = []
    for rank, evs in enumerate(timeline):
        events.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": rank,
                       "args": {"name": names[rank] if names else f"rank {rank}"}})
        for start, end, kind, label, peer in evs:
            args = {"waited_for": peer} if peer is not None else {}
            events.append({"name": label if kind != "wait" else f"wait: {label}", "ph": "X",
                           "cat": _CATEGORY.get(kind, kind), "ts": start * 1e6,
                           "dur": (end - start) * 1e6, "pid": 0, "tid": rank, "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def server_trace(events: list[tuple]) -> dict:
    """From (server, start, end, kind) events of the serving simulation."""
    tids = {s: i for i, s in enumerate(sorted({e[0] for e in events}))}
    out = [{"ph": "M", "name": "thread_name", "pid": 0, "tid": t, "args": {"name": s}}
           for s, t in tids.items()]
    out += [{"name": kind, "ph": "X", "cat": kind, "ts": start * 1e6, "dur": (end - start) * 1e6,
             "pid": 0, "tid": tids[server]} for server, start, end, kind in events]
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_trace(path: str, trace: dict) -> None:
    """Write whole, then rename: a reader never sees half a trace."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(trace, f)
    os.replace(tmp, path)
