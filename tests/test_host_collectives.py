"""Host-collective prices from a benchmark run: latency by rank count with its run-to-run
band, and the wait for the slowest member as the expected maximum of n draws from the measured
per-rank work distribution."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.perf.host_collectives import (HOST_COLLECTIVES, HostCollectiveData, Spread,
                                          expected_excess, load_host_collectives)


def row(backend, n, us, run=0, coll="allgather", payload="ids", samples=100):
    return {"backend": backend, "ranks": n, "run": run, "collective": coll, "payload": payload,
            "p10_us": us * 0.8, "p50_us": us, "p90_us": us * 1.2, "mean_us": us,
            "samples": samples, "pinned": True, "oversubscribed": False}


def loop(n, work_us, quantiles, run=0, backend="mpi"):
    return {"backend": backend, "ranks": n, "run": run, "work_us_target": work_us,
            "work": {"p10_us": work_us, "p50_us": work_us, "p90_us": work_us},
            "relative_quantiles": quantiles, "pinned": True, "oversubscribed": False}


NARROW = [0.98, 0.99, 1.0, 1.01, 1.02]
WIDE = [0.9, 0.95, 1.0, 1.05, 1.1]
RUN = {"schema": 2, "info": {"command": "bench", "cpus": 16, "date": "2026-12-01"},
       "latency": [row("mpi", 2, 6), row("mpi", 8, 18), row("mpi", 8, 22, run=1),
                   row("mpi", 16, 31), row("mpi", 8, 40, coll="bcast"), row("gloo", 2, 880),
                   row("gloo", 8, 3956)],
       "jitter": [loop(2, 1000, NARROW), loop(2, 1000, WIDE, run=1), loop(2, 12500, WIDE)],
       "excluded": [{**loop(8, 1000, WIDE), "why": "cores of two speeds"}]}
DATA = HostCollectiveData.from_dict(RUN)


def test_latency_at_measured_points_between_and_its_band_over_the_runs():
    assert DATA.latency_s("mpi", 8) == pytest.approx(20e-6)           # every call's mean
    assert DATA.latency_s("mpi", 8, quantile="low") == pytest.approx(18e-6)
    assert DATA.latency_s("mpi", 8, quantile="high") == pytest.approx(22e-6)
    assert DATA.latency_s("mpi", 4) == pytest.approx(6e-6 + 14e-6 * 2 / 6)
    assert DATA.latency_s("mpi", 32) == pytest.approx(31e-6 + 11e-6 * 2)   # extrapolated
    assert DATA.latency_s("mpi", 1) == 0.0
    assert DATA.latency_s("mpi", 8, "bcast") == pytest.approx(40e-6)
    assert DATA.latency_s("gloo", 8, "bcast") == pytest.approx(3956e-6)    # allgather stands in
    with pytest.raises(ValueError, match="backend='ucx': no measured latency"):
        DATA.latency_s("ucx", 8)


def test_the_wait_is_the_work_times_the_order_statistic_of_the_pooled_runs():
    point = DATA.jitter_point("mpi", 8, 1.1e-3)
    assert point.ranks == 2 and point.work_s == pytest.approx(1e-3)      # nearest unit
    pooled = tuple(sorted(NARROW + WIDE))
    assert DATA.wait_s("mpi", 8, 1.1e-3) == pytest.approx(1.1e-3 * expected_excess(pooled, 8))
    assert DATA.wait_s("mpi", 8, 1.1e-3, "low") == pytest.approx(
        1.1e-3 * expected_excess(tuple(NARROW), 8))
    assert DATA.wait_s("mpi", 8, 1.1e-3, "high") == pytest.approx(
        1.1e-3 * expected_excess(tuple(WIDE), 8))
    # 12 ms of host work draws from the 12.5 ms unit's distribution; more members wait longer
    assert DATA.wait_s("mpi", 8, 12e-3) == pytest.approx(12e-3 * expected_excess(tuple(WIDE), 8))
    assert DATA.wait_s("mpi", 16, 12e-3) > DATA.wait_s("mpi", 8, 12e-3)
    # gloo measured no loop: the spread is the host's work, so MPI's distribution serves
    assert DATA.wait_s("gloo", 8, 12e-3) == DATA.wait_s("mpi", 8, 12e-3)
    assert DATA.wait_s("mpi", 1, 12e-3) == DATA.wait_s("mpi", 8, 0.0) == 0.0
    assert any("cores of two speeds" in why for why in DATA.excluded)


def test_expected_excess_of_known_distributions():
    assert expected_excess((5.0,) * 101, 8) == pytest.approx(0.0, abs=1e-12)
    # two equally likely values 0 and 1: E[max of 2] = 3/4, mean 1/2
    assert expected_excess((0.0, 1.0), 2) == pytest.approx(0.25)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.5, 2.0), min_size=2, max_size=40), st.integers(1, 40))
def test_expected_excess_grows_with_members_and_stays_below_the_range(values, n):
    q = tuple(sorted(values))
    assert 0 <= expected_excess(q, n)
    assert expected_excess(q, n + 1) + 1e-12 >= expected_excess(q, n)
    assert expected_excess(q, n) <= max(q) - sum(q) / len(q) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 64), st.floats(0, 5e-2), st.sampled_from(["low", "central", "high"]))
def test_prices_are_finite_and_ordered_by_quantile(n, work, q):
    lat = [DATA.latency_s("mpi", n, quantile=x) for x in ("low", "central", "high")]
    wait = [DATA.wait_s("mpi", n, work, x) for x in ("low", "central", "high")]
    assert lat == sorted(lat) and wait == sorted(wait)
    assert 0 <= DATA.wait_s("mpi", n, work, q) <= work and 0 < DATA.latency_s("mpi", n, quantile=q)


@pytest.mark.parametrize("kwargs,message", [
    ({"low": -1.0, "central": 1.0, "high": 2.0}, "Spread.low=-1.0 must be a finite number"),
    ({"low": 3.0, "central": 3.0, "high": 2.0}, "must hold low <= central <= high"),
])
def test_spread_validation_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Spread(**kwargs)
    with pytest.raises(ValueError, match="quantile='p50'"):
        Spread(1, 2, 3).at("p50")


@pytest.mark.parametrize("change,message", [
    ({"schema": 1}, "schema=1; expected 2"),
    ({"latency": [{**row("mpi", 16, 31), "oversubscribed": True}]},
     "latency row of 16 mpi ranks is oversubscribed"),
    ({"jitter": [{**loop(2, 1000, NARROW), "pinned": False}]}, "jitter row of 2 mpi ranks is "
                                                               "unpinned"),
])
def test_a_file_that_prices_an_oversubscribed_or_unpinned_run_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        HostCollectiveData.from_dict({**RUN, **change})


def test_a_run_file_loads_and_the_shipped_one_prices_from_pinned_runs(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    assert load_host_collectives(str(path)) == DATA
    assert "bench on 16 CPUs" in DATA.source
    for backend in ("mpi", "gloo"):
        assert HOST_COLLECTIVES.latency_s(backend, 8) > 0
    # TRT-LLM's MPI gather is far cheaper than gloo's on the same host (DESIGN 3.8)
    assert HOST_COLLECTIVES.latency_s("gloo", 8) > 50 * HOST_COLLECTIVES.latency_s("mpi", 8)
    assert HOST_COLLECTIVES.jitter, "the shipped run holds the per-rank work distribution"
    assert HOST_COLLECTIVES.excluded, "the shipped file says which launches it left out"
    # the measured spread is a few percent of the work: 8 members wait a few percent more
    wait = HOST_COLLECTIVES.wait_s("mpi", 8, 12.5e-3)
    assert 0 < wait < 0.2 * 12.5e-3
