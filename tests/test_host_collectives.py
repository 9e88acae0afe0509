"""Host-collective prices from a benchmark run: latency by rank count, the slowest member's
wait by host work, the order-statistics step to rank counts the loop did not run."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trtsim.perf.host_collectives import (HOST_COLLECTIVES, HostCollectiveData, Spread,
                                          expected_excess, load_host_collectives)


def row(backend, n, us, coll="allgather", payload="ids", spread=0.2):
    return {"backend": backend, "ranks": n, "collective": coll, "payload": payload,
            "p10_us": us * (1 - spread), "p50_us": us, "p90_us": us * (1 + spread),
            "mean_us": us, "samples": 100}


def loop(backend, n, work_us, excess_us, quantiles):
    return {"backend": backend, "ranks": n, "work_us_target": work_us, "iterations": 100,
            "work": {"p10_us": work_us, "p50_us": work_us, "p90_us": work_us,
                     "mean_us": work_us, "samples": 100 * n},
            "work_quantiles_us": quantiles,
            "excess": {"p10_us": excess_us / 2, "p50_us": excess_us, "p90_us": excess_us * 2,
                       "mean_us": excess_us, "samples": 100},
            "wait": {"p10_us": 1, "p50_us": 2, "p90_us": 3, "mean_us": 2, "samples": 100}}


SPREAD_Q = [1000.0 + 10 * i for i in range(101)]        # work 1.0-2.0 ms, uniform
RUN = {"schema": 1, "info": {"command": "bench", "cpus": 16, "date": "2026-12-01"},
       "latency": [row("mpi", 2, 6), row("mpi", 8, 18), row("mpi", 16, 31),
                   row("mpi", 8, 40, coll="bcast"), row("gloo", 2, 880), row("gloo", 8, 3956)],
       "jitter": [loop("mpi", 8, 1000, 50, SPREAD_Q), loop("mpi", 8, 4000, 120, SPREAD_Q),
                  loop("mpi", 2, 1000, 10, SPREAD_Q)]}
DATA = HostCollectiveData.from_dict(RUN)


def test_latency_at_measured_points_and_between():
    assert DATA.latency_s("mpi", 8) == pytest.approx(18e-6)
    assert DATA.latency_s("mpi", 4) == pytest.approx(10e-6)          # 6 + (18 - 6) * 2/6
    assert DATA.latency_s("mpi", 32) == pytest.approx(57e-6)         # 31 + 13 * 16 / 8
    assert DATA.latency_s("mpi", 1) == 0.0
    assert DATA.latency_s("mpi", 8, quantile="high") == pytest.approx(18e-6 * 1.2)
    assert DATA.latency_s("mpi", 8, "bcast") == pytest.approx(40e-6)
    # no broadcast measured for gloo: the allgather stands in
    assert DATA.latency_s("gloo", 8, "bcast") == pytest.approx(3956e-6)
    with pytest.raises(ValueError, match="backend='ucx': no measured latency"):
        DATA.latency_s("ucx", 8)


def test_excess_interpolates_over_work_and_holds_beyond():
    assert DATA.excess_s("mpi", 8, 1e-3) == pytest.approx(50e-6)
    assert DATA.excess_s("mpi", 8, 0.5e-3) == pytest.approx(25e-6)   # from (0, 0)
    assert DATA.excess_s("mpi", 8, 2.5e-3) == pytest.approx(85e-6)
    assert DATA.excess_s("mpi", 8, 40e-3) == pytest.approx(120e-6)
    assert DATA.excess_s("mpi", 8, 1e-3, "low") == pytest.approx(25e-6)
    assert DATA.excess_s("mpi", 1, 1e-3) == DATA.excess_s("mpi", 8, 0.0) == 0.0


def test_unmeasured_rank_counts_scale_by_order_statistics():
    """16 ranks were not looped: the 8-rank excess times E[excess of 16] / E[excess of 8] of
    the measured work distribution."""
    ratio = expected_excess(tuple(SPREAD_Q), 16) / expected_excess(tuple(SPREAD_Q), 8)
    assert 1 < ratio < 2
    assert DATA.excess_s("mpi", 16, 1e-3) == pytest.approx(50e-6 * ratio)
    # a backend without loops borrows the other backend's (the jitter is the host work's)
    assert DATA.excess_s("gloo", 8, 1e-3) == pytest.approx(50e-6)


def test_expected_excess_of_known_distributions():
    assert expected_excess((5.0,) * 101, 8) == pytest.approx(0.0, abs=1e-12)
    # two equally likely values 0 and 1: E[max of 2] = 3/4, mean 1/2
    assert expected_excess((0.0, 1.0), 2) == pytest.approx(0.25)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1e-2), min_size=2, max_size=40), st.integers(1, 40))
def test_expected_excess_grows_with_members(values, n):
    q = tuple(sorted(values))
    assert 0 <= expected_excess(q, n) + 1e-12
    assert expected_excess(q, n + 1) + 1e-12 >= expected_excess(q, n)
    assert expected_excess(q, n) <= max(q) - sum(q) / len(q) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 64), st.floats(0, 5e-2), st.sampled_from(["low", "central", "high"]))
def test_prices_are_finite_monotone_in_quantile(n, work, q):
    lat = [DATA.latency_s("mpi", n, quantile=x) for x in ("low", "central", "high")]
    exc = [DATA.excess_s("mpi", n, work, x) for x in ("low", "central", "high")]
    assert lat == sorted(lat) and exc == sorted(exc)
    assert 0 <= DATA.excess_s("mpi", n, work, q) < 1 and 0 < DATA.latency_s("mpi", n, quantile=q)


@pytest.mark.parametrize("kwargs,message", [
    ({"low": -1.0, "central": 1.0, "high": 2.0}, "Spread.low=-1.0 must be a finite number"),
    ({"low": 3.0, "central": 3.0, "high": 2.0}, "Spread.low=3.0 exceeds Spread.high=2.0"),
])
def test_spread_validation_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Spread(**kwargs)
    with pytest.raises(ValueError, match="quantile='p50'"):
        Spread(1, 2, 3).at("p50")


def test_a_run_file_loads_and_the_shipped_one_prices_mpi_and_gloo(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(RUN))
    assert load_host_collectives(str(path)) == DATA
    assert "bench on 16 CPUs" in DATA.source
    for backend in ("mpi", "gloo"):
        assert HOST_COLLECTIVES.latency_s(backend, 8) > 0
    # TRT-LLM's MPI gather is far cheaper than gloo's on the same host (DESIGN 3.8)
    assert HOST_COLLECTIVES.latency_s("gloo", 8) > 50 * HOST_COLLECTIVES.latency_s("mpi", 8)
    assert HOST_COLLECTIVES.loops, "the shipped run holds a host-bound loop"
