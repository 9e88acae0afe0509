"""The collective census: the signal behind incident 5.3, and a budget tests can assert."""

import pytest

from trtsim.jobs.run import run

SCENARIO = "scenarios/executor_ctx_adp4_gen_tp8.yaml"
SMALL = {"workload.num_requests": 16, "workload.arrival_interval": 2}


@pytest.fixture(scope="module")
def census_by_variant():
    return {v: run(SCENARIO, overrides={**SMALL, "transceiver.sticky_skip": v})
            for v in ("off", "guarded")}


def test_pure_role_gen_worker_gathers_every_iteration_with_off(census_by_variant):
    res = census_by_variant["off"]
    assert res.holds
    iters = res.metrics["gen_iterations"]
    per_iter = res.census.per_iteration(role="gen", label="ctx_consensus", rank=4)
    # every generation iteration but the last (the shutdown one) polls the send side twice
    assert len(per_iter) >= iters - 1 and set(per_iter.values()) == {2}


def test_guarded_removes_the_gathers(census_by_variant):
    res = census_by_variant["guarded"]
    assert res.holds and res.metrics["completed"] == 16
    assert res.census.count(role="gen", label="ctx_consensus") == 0
    assert res.census.count(role="gen", label="ctx_outcome") == 0
    # the generation side's own consensus is untouched
    assert res.census.count(role="gen", label="gen_consensus") > 0


def test_census_table_and_budget(census_by_variant):
    res = census_by_variant["off"]
    table = res.census.table()
    assert "ctx_consensus" in table and "per rank-iter" in table
    # budget: the context workers (ADP, pp1) never gather for the receive side
    assert res.census.count(role="ctx", label="gen_consensus") == 0


def test_census_counts_agree_with_rows(census_by_variant):
    res = census_by_variant["off"]
    assert res.census.count() == sum(r.count for r in res.census.rows)
    assert res.census.count(kind="p2p", label="kv_transfer") > 0
