"""Chrome / Perfetto trace files (the JSON ``traceEvents`` format, times in microseconds).

Functional runs: one process per instance (ctx, gen), one thread per rank named as reports
name it, slices for compute, collectives, waits and transfers on the virtual clock, and an
instant event on each rank where the guard fired. Perf runs: one process per simulated server,
each step a slice with its control plane and forward pass as children. Open in
ui.perfetto.dev or chrome://tracing.

Times are integer nanoseconds, computed once per time point: a slice's end is the next
slice's start exactly, so no two slices of a track overlap after rounding (Perfetto drops
overlapping complete events, ``slice_drop_overlapping_complete_event``). The JSON format
wants microseconds, and Perfetto turns a number back into nanoseconds by multiplying by 1000
and truncating; ``n / 1000`` does not always survive that (1001 ns reads back as 1000), so a
time is written as ``(n + 0.25) / 1000``: truncated or rounded, it reads back as ``n``.
No ``displayTimeUnit`` is written: some Perfetto builds read it as the unit of ``ts``.
Slice names are stable (``pp_allgather 'gen_consensus'``); call number, iteration, peer and
whom a wait was for are args.
"""

from __future__ import annotations

import json
import re

from ..safe_write import atomic_writer

_CATEGORY = {"compute": "compute", "collective": "collective", "wait": "wait", "p2p": "transfer"}
# The clocks name a call as CallRecord.short() does: "pp_allgather #3 'gen_consensus' iter 2",
# "send_object(peer=5, tag=7) 'kv' iter 0"; the name and the details are split here.
_CALL = re.compile(r"^(?P<op>[A-Za-z_]\w*)(?:\(peer=(?P<peer>-?\d+), tag=(?P<tag>-?\d+)\))?"
                   r"(?: #(?P<seq>\d+))?(?: (?P<label>'[^']*'|\"[^\"]*\"))? iter (?P<it>-?\d+)$")


def to_ns(seconds: float) -> int:
    """A virtual time in integer nanoseconds."""
    return round(seconds * 1e9)


def us(ns: int) -> float:
    """Integer nanoseconds as the trace's microseconds, safe against truncation on import."""
    return (ns + 0.25) / 1000.0


def split_call(text: str) -> tuple[str, dict]:
    """(stable slice name, args) of a call as the clocks name it."""
    m = _CALL.match(text)
    if m is None:
        return text, {}
    name = m["op"] + (f" {m['label']}" if m["label"] else "")
    args = {"iteration": int(m["it"])}
    if m["seq"]:
        args["call"] = int(m["seq"])
    if m["peer"] is not None:
        args.update(peer=int(m["peer"]), tag=int(m["tag"]))
    return name, args


def _complete(name: str, cat: str, start_ns: int, end_ns: int, pid: int, tid: int,
              args: dict) -> dict:
    event = {"name": name, "ph": "X", "cat": cat, "ts": us(start_ns),
             "dur": us(end_ns - start_ns), "pid": pid, "tid": tid}
    if args:
        event["args"] = args
    return event


def _meta(kind: str, pid: int, tid: int, name: str, sort: int) -> list[dict]:
    what = "process" if kind == "process" else "thread"
    return [{"ph": "M", "name": f"{what}_name", "pid": pid, "tid": tid, "args": {"name": name}},
            {"ph": "M", "name": f"{what}_sort_index", "pid": pid, "tid": tid,
             "args": {"sort_index": sort}}]


def rank_trace(timeline: list[list[tuple]], tracks: list[tuple[str, str]] | None = None,
               marks: list[tuple[int, str, dict]] = ()) -> dict:
    """From per-rank (start, end, kind, label, peer) events. ``tracks[r]`` is rank r's
    (instance, name); ``marks`` are (rank, name, args) instants at the rank's last time
    point (where the guard stopped it)."""
    tracks = tracks or [("", f"rank {r}") for r in range(len(timeline))]
    pids = {inst: i + 1 for i, inst in enumerate(dict.fromkeys(i for i, _ in tracks))}
    events = []
    for inst, pid in pids.items():
        events += _meta("process", pid, 0, f"{inst} instance" if inst else "launch", pid)
    ends: list[int] = []
    for rank, evs in enumerate(timeline):
        inst, name = tracks[rank]
        pid = pids[inst]
        events += _meta("thread", pid, rank, name, rank)
        last = 0
        for start, end, kind, label, peer in evs:
            s_ns, e_ns = max(to_ns(start), last), to_ns(end)   # never before the last end
            if e_ns < s_ns:
                continue
            slice_name, args = split_call(label) if kind != "compute" else (label, {})
            if peer is not None:
                args["waited_for"] = tracks[peer][1] if 0 <= peer < len(tracks) else peer
            if kind == "wait":
                slice_name = f"wait: {slice_name}"
            events.append(_complete(slice_name, _CATEGORY.get(kind, kind), s_ns, e_ns, pid,
                                    rank, args))
            last = e_ns
        ends.append(last)
    for rank, name, args in marks:
        events.append({"name": name, "ph": "i", "s": "t", "cat": "guard", "ts": us(ends[rank]),
                       "pid": pids[tracks[rank][0]], "tid": rank, "args": args})
    return {"traceEvents": events}


def server_trace(events: list[tuple], parts=None, label=None) -> dict:
    """From (server, start, end, kind) events of the serving simulation: one process per
    server; steps that overlap in time (the simulation may start a server's next batch
    before the last one is done) go to further threads of it, so none is dropped.
    ``parts(server, kind, seconds)`` splits a step into ordered (name, seconds, args)
    children (its control plane, its forward pass) drawn inside the step's slice;
    ``label(server)`` is a line shown with the server's process."""
    pids = {s: i + 1 for i, s in enumerate(sorted({e[0] for e in events}))}
    out = []
    for server, pid in pids.items():
        out += _meta("process", pid, 0, f"server {server}", pid)
        if label is not None and label(server):
            out.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
                        "args": {"labels": label(server)}})
    lanes: dict[str, list[int]] = {s: [] for s in pids}      # per server: each lane's end
    for server, start, end, kind in sorted(events, key=lambda e: (e[1], e[2])):
        s_ns, e_ns = to_ns(start), to_ns(end)
        pid, ends = pids[server], lanes[server]
        lane = next((i for i, last in enumerate(ends) if last <= s_ns), None)
        if lane is None:
            lane = len(ends)
            ends.append(0)
            out += _meta("thread", pid, lane + 1, "steps" if lane == 0 else
                         f"steps (overlapping, {lane + 1})", lane)
        ends[lane] = e_ns
        out.append(_complete(kind, kind, s_ns, e_ns, pid, lane + 1, {}))
        t = s_ns
        for name, seconds, args in (parts(server, kind, end - start) if parts else ()):
            child_end = min(e_ns, t + to_ns(seconds))
            if child_end > t:
                out.append(_complete(name, name, t, child_end, pid, lane + 1, args))
            t = child_end
    return {"traceEvents": out}


def write_trace(path: str, trace: dict) -> None:
    """Write whole, then rename, safely (``safe_write``): a reader never sees half a trace, a
    planted link is never followed. ``OSError`` as the system says."""
    with atomic_writer(path) as f:
        json.dump(trace, f, separators=(",", ":"))
