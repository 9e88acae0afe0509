"""The PyExecutor loops of a context and a generation instance side by side (inproc)."""

import pytest

from trtsim.jobs.run import run

SMALL = {"workload.num_requests": 12, "workload.arrival_interval": 1,
         "workload.input_len": [16, 64], "workload.output_len": [2, 6]}


def serve(topology=None, deployment=None, **overrides):
    scen = {"name": "t", "workload": {"kind": "serving"}}
    if deployment:
        scen["deployment"] = deployment
    else:
        scen["topology"] = topology
    return run(scen, overrides={**SMALL, **overrides})


@pytest.mark.parametrize("topology", ["tp1_pp1", "tp2_pp1", "tp2_dp_both", "tp1_pp2",
                                      "tp2_pp2_dp_both", "tp4_dp_to_tp2pp2", "pp2_to_pp1",
                                      "mla_ctx_dp4_gen_tp8"])
@pytest.mark.parametrize("sticky", ["off", "guarded", "unguarded"])
def test_loops_serve_every_request_with_verified_kv(topology, sticky):
    res = serve(topology, **{"transceiver.sticky_skip": sticky})
    assert res.verdict == "ok", res.summary()
    assert res.kv_verified is True
    assert res.metrics["completed"] == 12


@pytest.mark.parametrize("loop", ["plain", "overlap"])
def test_plain_and_overlap_loops(loop):
    res = serve("tp2_dp_both", **{"executor.loop": loop})
    assert res.verdict == "ok" and res.metrics["completed"] == 12
    # the same calls each iteration, one batch later: the census labels agree
    labels = {(r.kind, r.label) for r in res.census.rows}
    assert ("tp", "can_queue") in labels and ("tp", "responses") in labels


def test_executor_scenario_runs_a_few_hundred_iterations():
    res = run("scenarios/executor_tp4_pp2_dp_both.yaml")
    assert res.holds and res.kv_verified is True
    assert res.metrics["completed"] == 64 and res.metrics["ctx_iterations"] >= 200


def test_pp_loop_messages_round_the_ring():
    res = serve("tp1_pp2")
    assert res.verdict == "ok"
    for label in ("pp_schedule", "pp_activation", "pp_sample_state", "fetch_requests"):
        assert res.census.count(role="ctx", kind="p2p", label=label) > 0, label


def test_pp_stages_flip_together_with_ring_count_handling():
    """Every stage handles an executed batch in the same iteration: the unguarded skip stays
    symmetric within each PP group, so strict mode holds."""
    res = serve("tp4_pp2_dp_both", **{"transceiver.sticky_skip": "unguarded"})
    assert res.verdict == "ok" and res.kv_verified is True


def test_pp_stages_flip_apart_on_arrival_and_the_guard_names_the_skipping_stage():
    res = run("scenarios/executor_pp_on_arrival_unguarded.yaml")
    assert res.verdict == "deadlock" and res.holds
    err = res.error
    assert err.group_kind == "pp" and err.group_ranks == (0, 4)
    assert "ctx rank 4 (global 4) left iteration 0 without entering pp_allgather" in err.explanation
    assert "'ctx_consensus'" in err.explanation


def test_a_retry_on_one_stage_flips_it_late():
    res = serve("tp4_pp2_dp_both", **{"transceiver.sticky_skip": "unguarded",
                                      "faults": {0: "send_retry@1"}})
    assert res.verdict == "deadlock"
    assert "skipped the call its peers wait in" in res.error.explanation
    fixed = serve("tp4_pp2_dp_both", **{"transceiver.sticky_skip": "guarded",
                                        "faults": {0: "send_retry@1"}})
    assert fixed.verdict == "ok" and fixed.metrics["completed"] == 12


@pytest.mark.parametrize("side", ["ctx", "gen"])
@pytest.mark.parametrize("kind", ["fail", "cancel"])
def test_a_fault_on_one_rank_reaches_every_rank_by_consensus(side, kind):
    res = serve("tp2_pp2", **{"faults": {3: f"{side}_{kind}"}})
    assert res.verdict == "ok", res.summary()
    assert res.metrics["completed"] == 11
    assert res.metrics["failed" if kind == "fail" else "cancelled"] == 1


def test_async_transceiver_timeouts_are_local():
    res = serve("tp2_pp1", **{"transceiver.timeout_iters": 1})
    assert res.verdict == "ok" and res.metrics["completed"] == 12
