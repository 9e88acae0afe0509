"""vLLM's DP coordination explored on the inproc backend: hypothesis draws the token
schedule (which DP rank is idle at which step) and the schedule seed; nothing tells it where
the #43547 skip is. The guard reports exactly the schedules on which an idle rank leaves the
DP all-reduce out alone; a user's property test on the plugin's ``trtsim_launch`` fixture
finds one unaided and shrinks it to one step, and the shrunk case replays: the same
schedule and seed give the same report, every time."""

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import trtsim
from tests.realcode import harness, vllm_programs
from trtsim import strategies as tst

# tokens per step for DP ranks 0 and 1; shrinking goes toward fewer steps and fewer tokens
schedules = st.lists(st.lists(st.integers(0, 4), min_size=2, max_size=2), min_size=1,
                     max_size=4)
SEARCH = settings(max_examples=40, database=None, deadline=None,
                  phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck))


def dp_options(schedule, idle_skips: bool, schedule_seed: int) -> dict:
    """The launch of vLLM's DP2 program on inproc, as keyword arguments."""
    return harness.options("inproc", ("vllm",), tp=2, attention_dp=True,
                           args=(schedule, idle_skips), iteration_marker=vllm_programs.DP_STEP,
                           seed=schedule_seed)


def run_dp(schedule, idle_skips: bool, schedule_seed: int):
    return trtsim.launch(vllm_programs.dp_steps, **dp_options(schedule, idle_skips,
                                                              schedule_seed))


def diverges(schedule) -> bool:
    """Some step has an idle DP rank while another has tokens: the skip runs alone."""
    return any(0 in step and any(step) for step in schedule)


def report_of(schedule, schedule_seed: int) -> trtsim.CollectiveError | None:
    try:
        run_dp(schedule, True, schedule_seed)
    except trtsim.CollectiveError as err:
        return err
    return None


@pytest.mark.timeout(600)
@settings(max_examples=15, deadline=None, database=None)
@given(schedules, st.booleans(), tst.seeds())
def test_the_guard_reports_exactly_the_schedules_where_an_idle_rank_skips_alone(
        schedule, idle_skips, schedule_seed):
    if idle_skips and diverges(schedule):
        with pytest.raises((trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock)) as info:
            run_dp(schedule, idle_skips, schedule_seed)
        assert all(harness.in_file(c, "vllm/v1/worker/dp_utils.py")
                   for c in info.value.calls.values()), str(info.value)
    else:
        results = run_dp(schedule, idle_skips, schedule_seed)
        assert list(results) == [schedule, schedule]       # every rank learnt every count


@pytest.mark.timeout(600)
def test_the_fixture_finds_the_skip_unaided_and_the_shrunk_case_replays(trtsim_launch):
    tried = []

    # What a user writes: every schedule must run clean. The fixture fails the test with the
    # guard's report; hypothesis shrinks, then runs the smallest failing case once more.
    @SEARCH
    @seed(0)
    @given(schedules, tst.seeds())
    def every_schedule_runs_clean(schedule, schedule_seed):
        tried.append((schedule, schedule_seed))
        trtsim_launch(vllm_programs.dp_steps, **dp_options(schedule, True, schedule_seed))

    with pytest.raises(pytest.fail.Exception) as info:
        every_schedule_runs_clean()
    schedule, schedule_seed = tried[-1]                    # the shrunk case, run last
    assert schedule in ([[0, 1]], [[1, 0]]), tried[-1]     # one step, one idle rank
    idle, busy = schedule[0].index(0), schedule[0].index(1)
    # one step: the idle rank has finished, its peer waits in vLLM's DP all-reduce alone
    assert f"likely: rank {idle} returned while rank {busy} waits" in info.value.msg, \
        info.value.msg
    assert "vllm/v1/worker/dp_utils.py" in info.value.msg, info.value.msg
    # the replay: the same schedule and seed give the fixture's report, every time
    first, again = report_of(schedule, schedule_seed), report_of(schedule, schedule_seed)
    assert first is not None and again is not None
    assert str(first) == str(again) == info.value.msg
    assert first.to_dict() == again.to_dict()
