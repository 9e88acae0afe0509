"""The iteration model: host-bound or GPU-bound, with or without the overlap scheduler, and the
price of an iteration's host collectives by how their members meet."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.perf.host_collectives import HostCollectiveData
from trtsim.perf.iteration import HostCollectives, HostPrices, iteration_time

DATA = HostCollectiveData.from_dict({
    "latency": [{"backend": "mpi", "ranks": n, "collective": "allgather", "payload": "ids",
                 "p10_us": us, "p50_us": us, "p90_us": us, "mean_us": us}
                for n, us in ((2, 10), (8, 20))]
    + [{"backend": "mpi", "ranks": 8, "collective": "bcast", "payload": "ids",
        "p10_us": 5, "p50_us": 5, "p90_us": 5, "mean_us": 5}],
    "jitter": [{"backend": "mpi", "ranks": 8, "work": {"p50_us": 10000},
                "work_quantiles_us": [10000.0] * 101,
                "excess": {"p10_us": 100, "p50_us": 100, "p90_us": 100, "mean_us": 100}}]})
PRICES = HostPrices("mpi", "central", DATA)
seconds = st.floats(0, 0.1, allow_nan=False)


@settings(max_examples=100, deadline=None)
@given(seconds, seconds, seconds)
def test_overlap_takes_the_longer_path_and_serial_the_sum(gpu, work, coll):
    on = iteration_time(gpu, work, coll, overlap=True)
    off = iteration_time(gpu, work, coll, overlap=False)
    assert on.step_s == pytest.approx(max(gpu, work + coll))
    assert off.step_s == pytest.approx(gpu + work + coll)
    assert on.step_s <= off.step_s
    assert on.bound == ("host" if work + coll > gpu else "gpu")


def test_the_5_3_shape_is_host_bound():
    """4.1 ms of roofline against 12.5 ms of host work: the host sets the step."""
    it = iteration_time(4.1e-3, 12.5e-3, 40e-6, overlap=True)
    assert it.bound == "host" and it.step_s == pytest.approx(12.54e-3)
    assert iteration_time(4.1e-3, 1e-3, 40e-6, overlap=True).step_s == 4.1e-3


def test_sync_gathers_wait_for_the_slowest_member_aligned_and_rooted_do_not():
    one_sync = HostCollectives(sync=((8, 1.0),))
    # 20 us latency + 100 us excess at 10 ms of work since the last sync point
    assert PRICES.collectives_s(one_sync, 10e-3) == pytest.approx(120e-6)
    assert PRICES.collectives_s(HostCollectives(aligned=((8, 1.0),)), 10e-3) == \
        pytest.approx(20e-6)
    assert PRICES.collectives_s(HostCollectives(rooted=((8, 1.0),)), 10e-3) == \
        pytest.approx(5e-6)
    # two sync points split the work: each waits over 5 ms (50 us, interpolated from 0)
    two = HostCollectives(sync=((8, 2.0),))
    assert PRICES.collectives_s(two, 10e-3) == pytest.approx(2 * (20e-6 + 50e-6))
    # groups of one are free, and no host work means no one to wait for
    assert PRICES.collectives_s(HostCollectives(sync=((1, 5.0),)), 10e-3) == 0.0
    assert PRICES.collectives_s(one_sync, 0.0) == pytest.approx(20e-6)
    assert one_sync.sync_points == 1.0 and two.calls == 2.0


@pytest.mark.parametrize("make,message", [
    (lambda: HostCollectives(sync=((0, 1.0),)), "HostCollectives.sync=((0, 1.0),)"),
    (lambda: HostCollectives(rooted=((8, -1.0),)), "HostCollectives.rooted=((8, -1.0),)"),
    (lambda: HostPrices("mpi", "median", DATA), "HostPrices.quantile='median'"),
    (lambda: HostPrices("ucx", "central", DATA), "backend='ucx'"),
    (lambda: iteration_time(-1.0, 0.0, 0.0, True), "gpu_s=-1.0"),
    (lambda: iteration_time(0.0, float("inf"), 0.0, True), "host_work_s=inf"),
])
def test_bad_inputs_name_the_field(make, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()
