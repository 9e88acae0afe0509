"""Asynchronous context consensus: a ballot round the PP ring replaces the pp_allgathers."""

import pytest

from trtsim.disagg.ring_consensus import combine
from trtsim.jobs.run import run


def test_outcome_precedence():
    assert combine(["completed", "failed"]) == "failed"
    assert combine(["failed", "cancelled", "completed"]) == "cancelled"
    assert combine(["completed"] * 3) == "completed"


@pytest.mark.parametrize("tid", ["tp1_pp2", "tp1_pp4", "7L_tp1_pp3", "5L_pp2_to_tp2"])
def test_transfer_with_ring_consensus_is_bit_exact_without_pp_gathers(tid):
    res = run("scenarios/kv_transfer.yaml",
              overrides={"topology": tid, "transceiver.async_consensus": True})
    assert res.verdict == "ok" and res.kv_verified is True
    assert res.census.count(role="ctx", label="ctx_consensus") == 0
    assert res.census.count(role="ctx", label="ctx_outcome") == 0
    assert res.census.count(role="ctx", label="ctx_consensus_ring") > 0


def test_executor_pp4_context_no_longer_gathers_every_iteration():
    scen = {"name": "x", "deployment": {"ctx": {"pp": 4}, "gen": {"tp": 2}},
            "workload": {"kind": "serving", "num_requests": 16}}
    blocking = run(scen)
    ring = run(scen, overrides={"transceiver.async_consensus": True})
    assert blocking.verdict == ring.verdict == "ok"
    assert blocking.metrics["completed"] == ring.metrics["completed"] == 16
    assert ring.kv_verified is True
    per_iter = blocking.census.count(role="ctx", kind="pp") / blocking.metrics["ctx_iterations"]
    assert per_iter > 4            # consensus and outcome gathers on every stage, every iteration
    assert ring.census.count(role="ctx", kind="pp") == 4      # only the init's layer count


def test_ring_only_for_context_tp1():
    # ctx TP2 x PP2 needs TP sync: the blocking path stays
    res = run("scenarios/kv_transfer.yaml",
              overrides={"topology": "tp2_pp2", "transceiver.async_consensus": True})
    assert res.verdict == "ok" and res.census.count(role="ctx", label="ctx_consensus_ring") == 0
