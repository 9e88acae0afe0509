"""A perf scenario whose layouts the executor cannot run to count its control plane is bad
input naming the instance at fault: a field of the census run's typed failure
(``control_plane.CensusRunFailed``), never a role read back out of a message's text."""

import pytest

from trtsim.calls.errors import CollectiveMismatch, RankFailed
from trtsim.jobs import control_plane as cp
from trtsim.jobs.dispatch import census_failure, run_any
from trtsim.scenario.perf import load_perf
from trtsim.scenario.schema import ScenarioError

STICKY = "scenarios/incident_sticky_skip.yaml"
# num_kv_heads=4 splits over neither instance's TP at tp=3
GEN_TP3 = {"gen.tp": 3, "gen.ep": 3}
CTX_TP3 = {"ctx.tp": 3, "ctx.ep": 3, "ctx.attention_dp": False}


@pytest.mark.parametrize("overrides, role", [(GEN_TP3, "gen"), (CTX_TP3, "ctx"),
                                             ({**GEN_TP3, **CTX_TP3}, "ctx")])
def test_the_census_run_names_the_refused_instance_as_a_field(overrides, role):
    s = load_perf(STICKY, overrides)
    with pytest.raises(cp.CensusRunFailed) as info:
        cp.measure_control_plane(s.config.ctx, s.config.gen, s.transceiver, s.executor.version)
    assert info.value.role == role
    assert info.value.reason.startswith("model.num_kv_heads: 4 does not split over the "
                                        f"{role} instance's tp=3 ranks")


@pytest.mark.parametrize("overrides, line", [
    (GEN_TP3, "gen: tp=3 pp=1 attention_dp=False: the executor cannot run this layout"),
    (CTX_TP3, "ctx: tp=3 pp=1 attention_dp=False: the executor cannot run this layout")])
def test_run_any_reports_the_instance_section_and_its_layout(overrides, line):
    with pytest.raises(ScenarioError) as info:
        run_any(STICKY, overrides)
    assert str(info.value).startswith(f"{STICKY}: {line} to count its control plane (")


def test_the_role_comes_from_the_field_not_the_text():
    # a reason that names the other instance's rank: the field decides
    scenario = load_perf(STICKY)
    failure = cp.CensusRunFailed("RankFailed-like text: ctx rank 0 (global 0) raised", "gen")
    assert census_failure(scenario, failure).startswith(
        f"{STICKY}: gen: tp=8 pp=1 attention_dp=False: the executor cannot run")
    unknown = cp.CensusRunFailed("gen instance's layout, in words only", None)
    assert census_failure(scenario, unknown) == (
        f"{STICKY}: ctx, gen: the executor cannot run these layouts (gen instance's layout, "
        "in words only)")


def test_a_failed_run_names_the_role_of_the_first_rank_its_report_names():
    roles = ["ctx"] * 4 + ["gen"] * 8
    assert cp.failing_role(RankFailed("gen rank 1 (global 5) raised", rank=5), roles) == "gen"
    assert cp.failing_role(CollectiveMismatch("x", ranks=(2, 6)), roles) == "ctx"
    assert cp.failing_role(CollectiveMismatch("no rank named"), roles) is None
