"""vLLM's DP coordination explored on the inproc backend: hypothesis draws the token
schedule (which DP rank is idle at which step) and the schedule seed; nothing tells it where
the #43547 skip is. The guard reports exactly the schedules on which an idle rank leaves the
DP all-reduce out alone, the search finds one unaided and shrinks it to one step, and running
the found example again gives the same report (the replay)."""

import random

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

import trtsim
from tests.realcode import harness, vllm_programs
from trtsim import strategies as tst

# tokens per step for DP ranks 0 and 1; shrinking goes toward fewer steps and fewer tokens
schedules = st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=2), min_size=1,
                     max_size=4)
SEARCH = settings(max_examples=40, database=None, deadline=None,
                  phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def run_dp(schedule, idle_skips: bool, seed: int):
    return harness.launch(vllm_programs.dp_steps, "inproc", ("vllm",), tp=2, attention_dp=True,
                          args=(schedule, idle_skips), iteration_marker=vllm_programs.DP_STEP,
                          seed=seed)


def diverges(schedule) -> bool:
    """Some step has an idle DP rank while another has tokens: the skip runs alone."""
    return any(0 in step and any(step) for step in schedule)


def report_of(schedule, seed: int) -> trtsim.CollectiveError | None:
    try:
        run_dp(schedule, True, seed)
    except trtsim.CollectiveError as err:
        return err
    return None


@pytest.mark.timeout(600)
@settings(max_examples=15, deadline=None, database=None)
@given(schedules, st.booleans(), tst.seeds())
def test_the_guard_reports_exactly_the_schedules_where_an_idle_rank_skips_alone(
        schedule, idle_skips, seed):
    if idle_skips and diverges(schedule):
        with pytest.raises((trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock)) as info:
            run_dp(schedule, idle_skips, seed)
        assert all(harness.in_file(c, "vllm/v1/worker/dp_utils.py")
                   for c in info.value.calls.values()), str(info.value)
    else:
        results = run_dp(schedule, idle_skips, seed)
        assert list(results) == [schedule, schedule]       # every rank learnt every count


@pytest.mark.timeout(600)
def test_the_search_finds_the_skip_unaided_and_the_replay_reports_the_same():
    found = find(st.tuples(schedules, tst.seeds()), lambda ex: report_of(*ex) is not None,
                 settings=SEARCH, random=random.Random(0))
    schedule, seed = found
    assert schedule in ([[0, 1]], [[1, 0]]), found              # shrunk to one step
    first, again = report_of(schedule, seed), report_of(schedule, seed)
    assert first is not None and again is not None
    assert type(first) is type(again) and first.to_dict() == again.to_dict(), (first, again)
    idle = schedule[0].index(0)
    assert f"rank {idle}" in str(first), str(first)
