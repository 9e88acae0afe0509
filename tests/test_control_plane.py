"""The control-plane census of every perf scenario: host collectives per forward rank-iteration,
per role and group, counted on the executor and transceiver versions each scenario follows."""

import pytest

from trtsim.disagg.transceiver_config import TransceiverConfig
from trtsim.jobs.control_plane import measure_control_plane
from trtsim.layout import ParallelLayout
from trtsim.perf.serving_sim import InstanceConfig
from trtsim.scenario.perf import load_perf


def census(path: str, **overrides):
    s = load_perf(path, overrides)
    return measure_control_plane(s.config.ctx, s.config.gen, s.transceiver, s.executor.version)


def by_label(control, role: str, per: str = "iteration") -> dict:
    rows = control.detail if per == "iteration" else control.detail_per_request
    return {(label, kind, size): calls for r, label, kind, size, _, calls in rows if r == role}


def meeting(control, role: str) -> dict:
    return {label: meet for r, label, _, _, meet, _ in control.detail + control.detail_per_request
            if r == role}


STICKY = "scenarios/incident_sticky_skip.yaml"   # executor classic, transceiver C


def test_5_3_generation_worker_before_the_change():
    """CLASSIC overlap loop + C, skip off: each decode iteration's _send_kv_async(previous)
    polls the send side once: its consensus and its packed outcome gather over TP 8. The
    receive side is polled only in the iteration after a transfer: once per request."""
    control = census(STICKY)
    assert by_label(control, "gen") == {("ctx_consensus", "tp", 8): 1.0,
                                        ("ctx_outcome", "tp", 8): 1.0,
                                        ("fetch_requests", "world", 8): 1.0}
    assert by_label(control, "gen", "request") == {("gen_consensus", "world", 8): 1.0,
                                                   ("gen_outcome", "world", 8): 1.0}


@pytest.mark.parametrize("variant", ["guarded", "unguarded"])
def test_5_3_the_change_removes_two_gathers_per_decode_iteration(variant):
    """The PR's "one tp_allgather per decode iter" is the consensus gather; the packed outcome
    gather of the same check (three empty lists) goes with it."""
    before, after = census(STICKY), census(STICKY, **{"transceiver.sticky_skip": variant})
    gone = {k: v for k, v in by_label(before, "gen").items()
            if by_label(after, "gen").get(k) != v}
    assert gone == {("ctx_consensus", "tp", 8): 1.0, ("ctx_outcome", "tp", 8): 1.0}
    assert before.gen.sync_points - after.gen.sync_points == pytest.approx(1.0)
    assert by_label(before, "ctx") == by_label(after, "ctx")   # DEP4: no gather to skip
    assert meeting(before, "gen") == {"ctx_consensus": "sync", "ctx_outcome": "aligned",
                                      "fetch_requests": "rooted", "gen_consensus": "sync",
                                      "gen_outcome": "aligned"}


def test_5_3_context_workers_adp_gathers_of_the_classic_loop():
    ctx = by_label(census(STICKY), "ctx")
    assert ctx == {("can_queue", "tp", 4): 1.0, ("rank_states", "tp", 4): 1.0,
                   ("fetch_requests", "world", 4): 1.0, ("first_token", "tp", 4): 1.0,
                   ("responses", "tp", 4): 1.0}


def test_5_2_context_pipeline_gathers_for_both_sides():
    """Coordinator + E on ctx PP4: the send checks gather over PP; E skips the receive check
    only where no sync is needed, and PP4 without ADP needs it: a world gather per iteration."""
    blocking = census("scenarios/incident_pp4_consensus.yaml")
    ring = census("scenarios/incident_pp4_consensus.yaml",
                  **{"transceiver.async_consensus": True})
    ctx_b, ctx_r = by_label(blocking, "ctx"), by_label(ring, "ctx")
    assert ctx_b[("gen_consensus", "world", 4)] == ctx_r[("gen_consensus", "world", 4)] == 1.0
    assert ctx_b[("ctx_consensus", "pp", 4)] > 3 and ("ctx_consensus", "pp", 4) not in ctx_r
    assert ctx_r == {("gen_consensus", "world", 4): 1.0, ("gen_outcome", "world", 4): 1.0}


@pytest.mark.parametrize("path", ["scenarios/incident_pp4_consensus.yaml",
                                  "scenarios/incident_mtp_bypass.yaml"])
def test_dep8_generation_server_gathers_of_the_coordinator(path):
    """handle_errors_synced, the rank states, can-queue and handle_timeouts_synced gather
    every iteration under ADP; the request broadcast and three gathers to rank 0 (first
    token, pending transfer responses, responses) are rooted."""
    control = census(path)
    assert by_label(control, "gen") == {(label, kind, 8): 1.0 for label, kind in [
        ("can_queue", "tp"), ("error_sync", "tp"), ("fetch_requests", "world"),
        ("first_token", "tp"), ("rank_states", "tp"), ("responses", "tp"), ("timeouts", "tp"),
        ("transfer_responses", "tp")]}
    assert control.gen.sync == ((8, 4.0),) and control.gen.rooted == ((8, 4.0),)
    assert meeting(control, "gen") == {
        "can_queue": "sync", "error_sync": "sync", "rank_states": "sync", "timeouts": "sync",
        "fetch_requests": "rooted", "first_token": "rooted", "responses": "rooted",
        "transfer_responses": "rooted"}


def test_gathers_right_after_another_are_aligned():
    """TP2 x PP2 without ADP: the context consensus gathers over TP, then over PP; the PP one
    and every outcome gather meet members that just met."""
    inst = InstanceConfig(layout=ParallelLayout(tp_size=2, pp_size=2), max_batch_size=4)
    control = measure_control_plane(inst, inst, TransceiverConfig(), "trtsim")
    ctx = by_label(control, "ctx")
    sync = dict(control.ctx.sync)
    aligned = dict(control.ctx.aligned)
    assert ctx[("ctx_consensus", "pp", 2)] > 0 and ctx[("ctx_consensus", "tp", 2)] > 0
    # every PP consensus follows a TP one: aligned, like the outcomes
    expect_aligned = ctx[("ctx_consensus", "pp", 2)] + ctx[("ctx_outcome", "pp", 2)] \
        + ctx[("ctx_outcome", "tp", 2)] + ctx.get(("gen_outcome", "world", 4), 0.0)
    assert aligned.get(2, 0.0) + aligned.get(4, 0.0) == pytest.approx(expect_aligned)
    assert sync[2] == pytest.approx(ctx[("ctx_consensus", "tp", 2)])
