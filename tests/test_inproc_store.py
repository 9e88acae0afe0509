"""The inproc launch's store (``_get_default_store()``) honours wait timeouts in the kernel's
time: a wait no rank can end any more times out at once with torch's ``DistStoreError``, the
same way on every run; waits without a timeout that nothing can end are a deadlock report."""

import math

import pytest

import trtsim
from tests import c10d_programs as P
from trtsim.backends.inproc import c10d_store as S


def launch(case: str, seed: int = 0):
    return trtsim.launch(P.store_waits, tp=2, args=(case,), intercept=("torch",), seed=seed,
                         timeout=60)


def test_a_key_no_rank_will_set_times_out_at_once_with_torchs_error():
    reports = []
    for seed in (0, 0, 5):
        with pytest.raises(trtsim.RankFailed) as info:
            launch("never", seed)
        reports.append(info.value.summary)
    assert reports[0] == reports[1] == reports[2], reports
    assert reports[0].startswith("rank 0 raised DistStoreError: wait timeout after 300000ms")
    assert reports[0].endswith("never")


def test_the_first_wait_to_expire_raises_and_the_program_goes_on():
    # rank 0 waits 5 ms, rank 1 without a timeout for the key rank 0 sets when its wait ends
    assert list(launch("timeout")) == ["timed out", "wait timeout after 5ms, keys: 0//never"]


def test_waits_without_a_timeout_that_nothing_can_end_are_a_deadlock():
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        launch("forever")
    err = info.value
    assert err.ranks == (0, 1), str(err)
    assert "rank 0 waits in store.wait for '0//never0' (no timeout)" in err.details, str(err)
    assert "rank 1 waits in store.wait for '0//never1' (no timeout)" in err.details, str(err)


def test_keys_set_in_time_are_no_timeout():
    assert list(launch("none")) == ["done", "done"]


def test_a_timeout_is_counted_in_turns_and_zero_waits_forever():
    import datetime
    assert S.turns(datetime.timedelta(milliseconds=5)) == 5
    assert S.turns(datetime.timedelta(seconds=300)) == 300_000
    assert S.turns(datetime.timedelta(0)) == math.inf


def test_the_first_expiry_is_the_fewest_turns_left_then_the_lowest_rank():
    w = lambda left: S.Waiting(("k",), None, left)  # noqa: E731
    assert S.first_expiry({3: w(7), 1: w(9), 2: w(7)}) == 2
    assert S.first_expiry({0: w(math.inf)}) is None


def test_nothing_can_happen_only_when_every_rank_is_done_blocked_or_waiting_in_vain():
    waiting = {0: S.Waiting(("k",), None, 5)}
    status = ["running", "blocked", "running"]
    assert S.stuck(3, status, {2}, waiting, lambda keys: False)
    assert not S.stuck(3, status, {2}, waiting, lambda keys: True)      # the key is there
    assert not S.stuck(3, status, set(), waiting, lambda keys: False)   # rank 2 can run
