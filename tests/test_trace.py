"""Perfetto traces load without data loss: no two slices of a track overlap once their times
are nanoseconds as Perfetto reads them, names are stable, tracks are named as reports name
ranks, and the guard's stop and a perf run's control plane are visible; a perf trace is
sampled to a few MB."""

import json
import math

from hypothesis import given, settings, strategies as st

from trtsim.jobs.dispatch import run_any
from trtsim.jobs.perf_run import TRACE_STEPS
from trtsim.jobs.run import run
from trtsim.timeline.trace import rank_trace, to_ns, us


def _read_ns(value: float, how) -> int:
    # Perfetto's JSON importer: microseconds times 1000, then truncated to an integer
    # (older builds) or rounded; either must give back the nanoseconds written.
    return how(value * 1000.0)


def overlaps(trace: dict, how=math.trunc) -> list:
    """Pairs of slices of one track that overlap without nesting, as Perfetto reads them."""
    tracks: dict = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "X":
            start = _read_ns(e["ts"], how)
            tracks.setdefault((e["pid"], e["tid"]), []).append(
                (start, start + _read_ns(e["dur"], how), e["name"]))
    bad = []
    for slices in tracks.values():
        stack = []
        for s in sorted(slices, key=lambda x: (x[0], -x[1])):
            while stack and stack[-1][1] <= s[0]:
                stack.pop()
            if stack and s[1] > stack[-1][1]:
                bad.append((stack[-1], s))
            stack.append(s)
    return bad


durations = st.lists(st.floats(1e-9, 5e-3, allow_nan=False), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(st.lists(durations, min_size=1, max_size=4), st.floats(0, 100, allow_nan=False))
def test_adjacent_slices_never_overlap_after_ns_rounding(per_rank, origin):
    timeline = []
    for durs in per_rank:
        now, evs = origin, []
        for i, d in enumerate(durs):            # back to back, as a rank's clock makes them
            kind = ("compute", "wait", "collective")[i % 3]
            evs.append((now, now + d, kind, f"tp_allgather #{i} 'x' iter 0", None))
            now += d
        timeline.append(evs)
    trace = rank_trace(timeline)
    assert overlaps(trace, math.trunc) == [] and overlaps(trace, round) == []


def test_the_written_microseconds_read_back_as_the_nanoseconds():
    for ns in (0, 1, 999, 1001, 1003, 123_456_789, 10**15 + 7):
        assert math.trunc(us(ns) * 1000) == ns == round(us(ns) * 1000)
    assert to_ns(1.001e-6) == 1001


def test_a_functional_trace_has_instances_rank_names_and_the_guard():
    res = run("sticky_skip_pp_deadlock")
    trace = res.trace_events()
    events = trace["traceEvents"]
    assert overlaps(trace) == [] and overlaps(trace, round) == []
    procs = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert procs == {"ctx instance", "gen instance"}
    threads = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert "gen rank 0 (global 8)" in threads and len(threads) == 16
    names = {e["name"] for e in events if e["ph"] == "X"}
    assert len(names) < 60, sorted(names)           # no call numbers or iterations in names
    assert all("#" not in n and " iter " not in n for n in names)
    with_calls = [e for e in events if e["ph"] == "X" and "call" in e.get("args", {})]
    assert with_calls and all("iteration" in e.get("args", {}) for e in with_calls)
    # Every rank of this PP topology gathers the layer split at construction.
    layer = {(e["pid"], e["tid"]) for e in events
             if e["name"] == "pp_allgather 'layer_num_per_pp'"}
    assert len(layer) == 16
    marks = [e for e in events if e["ph"] == "i"]
    assert marks and all(e["name"] == "guard: mismatch" for e in marks)
    assert {e["tid"] for e in marks} >= set(res.error.calls)


def test_a_perf_trace_shows_the_control_plane_inside_each_step():
    res = run_any("incident_sticky_skip")
    trace = res.trace_events()
    assert overlaps(trace) == [] and overlaps(trace, round) == []
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    steps = [e for e in events if e["name"] == "generation"]
    control = [e for e in events if e["name"] == "control plane" and e["pid"] == steps[0]["pid"]]
    assert steps and len(control) == sum(e["pid"] == steps[0]["pid"] for e in steps)
    assert all(e["dur"] > 0.25 / 1000 for e in control)
    procs = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert len(procs) == len({e["pid"] for e in events})       # one process per server
    # Sampled, and says so: at most TRACE_STEPS steps, a few MB where every step is 94 MB.
    assert len(json.dumps(trace, separators=(",", ":"))) < 10 * 2 ** 20
    shown = [e for e in events if e["name"] in ("generation", "prefill")]
    assert TRACE_STEPS // 2 < len(shown) <= TRACE_STEPS < len(res.sim.events)
    labels = [e["args"]["labels"] for e in trace["traceEvents"] if e["name"] == "process_labels"]
    assert sum("1 step in" in text for text in labels) == 4        # the four gen servers
