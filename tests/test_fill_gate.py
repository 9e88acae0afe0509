"""The gen-only benchmark's fill gate (DESIGN 5.4): it opens only when every member is ready,
and gives up on a request that fits nowhere at once under fail_fast or after the watchdog's
patience -- never while a transfer could still free space."""

from hypothesis import given, strategies as st

from trtsim.executor.fill_gate import FillStatus, fill_decision

statuses = st.builds(FillStatus, st.booleans(), st.booleans(), st.booleans(),
                     st.lists(st.integers(0, 20), max_size=3).map(tuple))


@given(everyone=st.lists(statuses, min_size=1, max_size=8), stall=st.integers(0, 60),
       limit=st.integers(1, 60))
def test_the_gate_opens_only_when_all_are_ready_and_gives_up_only_when_stuck(everyone, stall,
                                                                             limit):
    d = fill_decision(everyone, stall, limit)
    assert d.ready == all(s.ready for s in everyone)
    stuck = not d.ready and all(s.fetched_all and s.transfers_done for s in everyone) \
        and any(s.unfit for s in everyone)
    assert d.stall_iters == (stall + 1 if stuck else 0)
    if d.give_up:
        assert stuck and d.stall_iters >= limit
        assert set(d.give_up) == {r for s in everyone for r in s.unfit}
    else:
        assert not (stuck and d.stall_iters >= limit)


def test_fail_fast_gives_up_in_the_first_stuck_iteration_and_the_watchdog_waits():
    stuck = [FillStatus(True, False, True, (3,)), FillStatus(True, True, True, ())]
    assert fill_decision(stuck, 0, 1).give_up == (3,)
    stall = 0
    for i in range(49):
        d = fill_decision(stuck, stall, 50)
        assert not d.ready and not d.give_up
        stall = d.stall_iters
    assert fill_decision(stuck, stall, 50).give_up == (3,)
    moving = [FillStatus(True, False, False, (3,))]          # a transfer may still free space
    assert fill_decision(moving, 49, 50) == fill_decision(moving, 0, 1)
    assert not fill_decision(moving, 49, 50).give_up
