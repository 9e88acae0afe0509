"""MTP acceptance per draft depth from the scenario's source: a rate list, a measured AL, or
the run's forced acceptance (TensorRT-LLM's TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.perf.acceptance import (acceptance_length, emitted, rates_from_acceptance_length,
                                    rates_from_forced)
from trtsim.scenario.functional import ScenarioError
from trtsim.scenario.perf import load_perf

STICKY = "scenarios/incident_sticky_skip.yaml"


def test_trtllm_forced_acceptance_rule():
    # integer part every step, the fraction as the chance of one more, capped at K
    assert rates_from_forced(1, 1) == (1.0,)
    assert rates_from_forced(1.654, 3) == pytest.approx((1.0, 0.654, 0.0))
    assert rates_from_forced(5, 3) == (1.0, 1.0, 1.0)
    assert rates_from_forced(0, 2) == (0.0, 0.0)
    assert rates_from_acceptance_length(2.654, 3) == pytest.approx((1.0, 0.654, 0.0))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.floats(0, 1))
def test_a_measured_acceptance_length_is_reproduced_exactly(k, share):
    al = 1 + share * k
    assert acceptance_length(rates_from_acceptance_length(al, k)) == pytest.approx(al)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=4), st.integers(0, 2**31))
def test_steps_emit_the_rates_acceptance_length_on_average(rates, seed):
    rng = random.Random(seed)
    steps = [emitted(rng, tuple(rates)) for _ in range(4000)]
    assert all(1 <= s <= len(rates) + 1 for s in steps)
    assert sum(steps) / len(steps) == pytest.approx(acceptance_length(tuple(rates)), abs=0.1)


def test_each_source_reaches_the_simulation_as_rates():
    assert load_perf(STICKY).config.acceptance == pytest.approx((1.0, 0.654, 0.0))
    forced = load_perf("scenarios/incident_pp4_consensus.yaml").config
    assert forced.max_draft_len == 1 and forced.acceptance == (1.0,)
    listed = load_perf(STICKY, {"speculative.acceptance_length": 0,
                                "speculative.acceptance": [0.8, 0.6, 0.4]}).config
    assert listed.acceptance == (0.8, 0.6, 0.4)


@pytest.mark.parametrize("overrides,message", [
    ({"speculative.acceptance_length": 0}, "speculative.acceptance: acceptance=(): "
                                           "max_draft_len 3 needs the acceptance's source"),
    ({"speculative.acceptance": [0.9, 0.9, 0.9]}, "give one source of the acceptance"),
    ({"speculative.acceptance_length": 0, "speculative.acceptance": [0.9, 0.9]},
     "one rate per draft depth needs 3 values"),
    ({"speculative.acceptance_length": 0, "speculative.acceptance": [0.9, 1.5, 0.1]},
     "every rate must be in [0, 1]"),
    ({"speculative.acceptance_length": 5.0}, "acceptance_length=5.0 must be in [1, 4]"),
    ({"speculative.acceptance_length": 0, "speculative.force_num_accepted_tokens": -1},
     "force_num_accepted_tokens=-1 must be a number >= 0"),
])
def test_a_missing_or_bad_acceptance_names_the_key(overrides, message):
    with pytest.raises(ScenarioError) as info:
        load_perf(STICKY, overrides)
    assert message in str(info.value) and "incident_sticky_skip.yaml" in str(info.value)
