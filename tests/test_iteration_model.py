"""The iteration model: host-bound or GPU-bound, with or without the overlap scheduler; every
call's latency, and one wait for the slowest member per iteration that re-syncs its members,
over the whole iteration's host work."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.perf.host_collectives import HostCollectiveData, expected_excess
from trtsim.perf.iteration import HostCollectives, HostPath, HostPrices, iteration_time


def _row(n, us, coll="allgather"):
    return {"backend": "mpi", "ranks": n, "collective": coll, "payload": "ids", "mean_us": us,
            "samples": 10, "pinned": True}


SPREAD = [0.9, 1.0, 1.1]
DATA = HostCollectiveData.from_dict({
    "schema": 2, "latency": [_row(2, 10), _row(8, 20), _row(8, 5, "bcast")],
    "jitter": [{"backend": "mpi", "ranks": 8, "work_us_target": 10000,
                "work": {"p50_us": 10000}, "relative_quantiles": SPREAD, "pinned": True}]})
PRICES = HostPrices("mpi", "central", DATA)
WAIT_8 = expected_excess(tuple(SPREAD), 8)          # relative: E[max of 8 draws] - 1
seconds = st.floats(0, 0.1, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(seconds, seconds, seconds, seconds)
def test_overlap_takes_the_longer_path_and_serial_the_sum(gpu, work, latency, wait):
    path = HostPath(latency, wait)
    on = iteration_time(gpu, work, path, overlap=True)
    off = iteration_time(gpu, work, path, overlap=False)
    host = work + latency + wait
    assert on.step_s == pytest.approx(max(gpu, host))
    assert off.step_s == pytest.approx(gpu + host) and off.overlap_s == 0
    # step = gpu + host - overlap, term by term
    assert on.step_s == pytest.approx(on.gpu_s + on.host_s - on.overlap_s)
    assert on.bound == ("host" if host > gpu else "gpu")


def test_the_5_3_shape_is_host_bound():
    """4.1 ms of roofline against 12.5 ms of host work: the host sets the step."""
    it = iteration_time(4.1e-3, 12.5e-3, 40e-6, overlap=True)
    assert it.bound == "host" and it.step_s == pytest.approx(12.54e-3)
    assert iteration_time(4.1e-3, 1e-3, 40e-6, overlap=True).step_s == 4.1e-3


def test_an_iteration_that_re_syncs_waits_once_over_all_its_host_work():
    one = PRICES.host_path(HostCollectives(sync=((8, 1.0),)), 10e-3)
    assert one.latency_s == pytest.approx(20e-6)
    assert one.wait_s == pytest.approx(10e-3 * WAIT_8)
    # a second sync gather in the same iteration adds its latency, not another wait: the
    # first found the members apart, the second finds them together
    two = PRICES.host_path(HostCollectives(sync=((8, 2.0),)), 10e-3)
    assert two.latency_s == pytest.approx(40e-6) and two.wait_s == pytest.approx(one.wait_s)
    # aligned and rooted calls: latency only
    aligned = PRICES.host_path(HostCollectives(aligned=((8, 1.0),)), 10e-3)
    assert aligned.latency_s == pytest.approx(20e-6) and aligned.wait_s == 0
    assert PRICES.host_path(HostCollectives(rooted=((8, 1.0),)), 10e-3).latency_s == \
        pytest.approx(5e-6)
    # groups of one are free; no host work, no one to wait for
    assert PRICES.host_path(HostCollectives(sync=((1, 5.0),)), 10e-3) == HostPath(0.0, 0.0)
    assert PRICES.host_path(HostCollectives(sync=((8, 1.0),)), 0.0).wait_s == 0.0


def test_a_skipped_gather_removes_its_latency_and_the_re_syncs_it_forced():
    """5.3's shape: the send check (two gathers) every iteration, the receive check (two) in
    one iteration of 348; the skip removes the send check."""
    every = HostCollectives(sync=((8, 1.0),), aligned=((8, 1.0),))
    receive = HostCollectives(sync=((8, 1.0),), aligned=((8, 1.0),))
    before = PRICES.host_path(every.plus(receive, 1 / 348), 12.5e-3)
    after = PRICES.host_path(HostCollectives().plus(receive, 1 / 348), 12.5e-3)
    assert before.wait_s == pytest.approx(12.5e-3 * WAIT_8)          # re-synced every time
    assert after.wait_s == pytest.approx(12.5e-3 * WAIT_8 / 348)     # one iteration in 348
    assert before.latency_s - after.latency_s == pytest.approx(2 * 20e-6)
    assert every.plus(receive, 2.0).sync == ((8, 3.0),) and every.plus(receive, 0) is every


@pytest.mark.parametrize("make,message", [
    (lambda: HostCollectives(sync=((0, 1.0),)), "HostCollectives.sync=((0, 1.0),)"),
    (lambda: HostCollectives(rooted=((8, -1.0),)), "HostCollectives.rooted=((8, -1.0),)"),
    (lambda: HostPrices("mpi", "median", DATA), "HostPrices.quantile='median'"),
    (lambda: HostPrices("ucx", "central", DATA), "backend='ucx'"),
    (lambda: iteration_time(-1.0, 0.0, 0.0, True), "gpu_s=-1.0"),
    (lambda: iteration_time(0.0, float("inf"), 0.0, True), "host_work_s=inf"),
    (lambda: iteration_time(0.0, 0.0, HostPath(0.0, -1.0), True), "wait_s=-1.0"),
])
def test_bad_inputs_name_the_field(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()
