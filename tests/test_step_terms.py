"""Why a what-if moves the step: each role's mean step change split into latency removed,
wait removed, overlap regained, GPU time and host work removed; compare prints them."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.app.compare import comparison
from trtsim.jobs.perf_run import run_perf
from trtsim.perf.step_terms import mean_step, mean_terms, step_deltas

TERMS = ("gpu", "host_work", "latency", "wait", "overlap")
sums = st.fixed_dictionaries({t: st.floats(0, 10) for t in TERMS})


@settings(max_examples=100, deadline=None)
@given(sums, sums, st.integers(1, 50), st.integers(1, 50))
def test_the_terms_sum_to_the_change_of_the_mean_step(b, a, nb, na):
    before = {f"gen_{t}": v for t, v in b.items()} | {"gen_steps": nb}
    after = {f"gen_{t}": v for t, v in a.items()} | {"gen_steps": na}
    [delta] = step_deltas(before, after)
    assert delta.role == "gen"
    assert sum(v for _, v in delta.terms) == pytest.approx(delta.before_s - delta.after_s)
    assert delta.before_s == pytest.approx(mean_step(mean_terms(before, "gen")))
    assert step_deltas(before, {}) == []


def test_the_5_3_skip_is_the_wait_it_removes_and_compare_says_so():
    before = run_perf("scenarios/incident_sticky_skip.yaml")
    after = run_perf("scenarios/incident_sticky_skip.yaml", {"transceiver.sticky_skip": "guarded"})
    c = comparison(before, after)
    gen = next(d for d in c.terms if d.role == "gen")
    terms = dict(gen.terms)
    # two 8-rank gathers' latency and nearly every iteration's re-sync: nothing else moves
    assert 0 < terms["latency removed"] < 0.1e-3
    assert terms["wait removed"] > 10 * terms["latency removed"]
    # zero but for the rounding of means over each side's steps: under 1e-5 of the change
    tiny = 1e-5 * sum(abs(v) for v in terms.values())
    assert terms["GPU time removed"] == pytest.approx(0, abs=tiny)
    assert terms["host work removed"] == pytest.approx(0, abs=tiny)
    table = c.table()
    assert "why, at central prices" in table and "wait removed" in table
    assert c.to_dict()["step_terms"][0]["role"] == "gen"
