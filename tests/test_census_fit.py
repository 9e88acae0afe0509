"""The census at the real workload: each call's count split into a rate per forward iteration
and one per request, from three census workloads on trtsim's executor."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.jobs import control_plane as cp
from trtsim.perf.census_fit import CensusCount, fit_rates
from trtsim.scenario.perf import load_perf


@settings(max_examples=60, deadline=None)
@given(st.floats(0, 5), st.floats(0, 5), st.floats(0, 20))
def test_the_fit_recovers_per_iteration_and_per_request_rates(a, b, c):
    runs = [CensusCount(f, r, {"x": a * f + b * r + c}) for f, r in ((12, 3), (36, 3), (24, 6))]
    per_iteration, per_request = fit_rates(runs)
    assert per_iteration["x"] == pytest.approx(a, abs=1e-6)
    assert per_request["x"] == pytest.approx(b, abs=1e-6)


def test_iterations_that_do_not_grow_with_the_output_count_per_iteration():
    """A context server forwards each prompt once: its iterations follow the requests."""
    runs = [CensusCount(3, 3, {"x": 6.0}), CensusCount(3, 3, {"x": 6.0}),
            CensusCount(6, 6, {"x": 12.0})]
    assert fit_rates(runs) == ({"x": 2.0}, {"x": 0.0})


@pytest.mark.parametrize("path", ["scenarios/incident_sticky_skip.yaml",
                                  "scenarios/incident_pp4_consensus.yaml"])
def test_the_fit_predicts_a_fourth_census_of_the_generation_worker(path):
    s = load_perf(path)
    c = s.config
    control = cp.measure_control_plane(c.ctx, c.gen, s.transceiver, s.executor.version)
    census, reports = cp.census_run(c.ctx, c.gen, s.transceiver, s.executor.version, "gen",
                                    5, 9)
    count = cp.count_calls(census, reports, "gen", c.gen, 5)
    per_iter = {row[1:5]: row[5] for row in control.detail if row[0] == "gen"}
    per_req = {row[1:5]: row[5] for row in control.detail_per_request if row[0] == "gen"}
    assert count.calls
    for key, calls in count.calls.items():
        assert calls == pytest.approx(per_iter.get(key, 0.0) * count.forward_iterations
                                      + per_req.get(key, 0.0) * 5), key
