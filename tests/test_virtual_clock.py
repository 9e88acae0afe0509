"""Virtual time: collectives end at the latest arrival plus their cost, receives at the later
of arrival and send plus transfer, waits are attributed; the same program gives the same
timeline on the inproc and the process backend."""

import pytest
import torch

import trtsim
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.launching import default_clock_model
from trtsim.layout import InstanceLayout
from trtsim.timeline.clock import ClockModel, RankClock, complete_collective, receive_time

FREE = ClockModel(tensor_latency=0.0)


def test_collective_ends_at_latest_arrival_plus_cost():
    end, waits = complete_collective({0: 1.0, 1: 3.0, 2: 2.0}, 0.5, "tp_allgather #1")
    assert end == 3.5
    assert [(w.rank, w.waited_for, w.seconds) for w in waits] == [(0, 1, 2.0), (2, 1, 1.0)]


def test_receive_waits_for_the_send():
    assert receive_time(1.0, 2.0, 0.25) == 2.25
    assert receive_time(3.0, 2.0, 0.25) == 3.0


def test_clock_only_moves_forward():
    with pytest.raises(ValueError):
        RankClock().advance(-1)


def skew(dist, delays):
    """Rank r computes delays[r] seconds, then gathers: a gather under skew."""
    dist.advance(delays[dist.rank], "forward")
    dist.tp_allgather(dist.rank, label="state")
    return dist.clock.now, dist.clock.summary()


def test_gather_under_skew_gives_its_analytic_time():
    cm = default_clock_model()
    cost = cm.collective_cost("allgather", 4, "object")
    delays = [0.010, 0.040, 0.020, 0.030]
    res = trtsim.launch(skew, tp=4, args=(delays,))
    for r, (now, summ) in enumerate(res):
        assert now == pytest.approx(0.040 + cost)
        assert summ.get("wait", 0.0) == pytest.approx(0.040 - delays[r])
        if r != 1:
            assert summ["waited_for"] == {1: pytest.approx(0.040 - delays[r])}


def ring(dist, hop_s):
    """A PP ring of activations: each stage computes hop_s, then passes on."""
    x = torch.zeros(1024)
    if not dist.mapping.is_first_pp_rank():
        dist.recv_tensor(x, dist.mapping.prev_pp_rank(), tag=3)
    dist.advance(hop_s, "stage")
    if not dist.mapping.is_last_pp_rank():
        dist.send_tensor(x, dist.mapping.next_pp_rank(), tag=3)
    return dist.clock.now


def test_p2p_ring_gives_its_analytic_time():
    cm = default_clock_model()
    hop = 0.005
    transfer = cm.transfer_time(1024 * 4, True)
    res = trtsim.launch(ring, pp=4, args=(hop,))
    assert res == pytest.approx([hop * (s + 1) + transfer * s for s in range(4)])


def timeline_program(dist):
    dist.advance(0.001 * (dist.rank + 1), "forward")
    dist.tp_allgather({"r": dist.rank}, label="a")
    dist.pp_broadcast(dist.rank, root=1, label="b")
    dist.tp_allreduce(torch.ones(256), label="c")
    if dist.pp_rank == 0:
        dist.advance(0.002)
        dist.send_object(dist.rank, dist.mapping.next_pp_rank(), tag=4)
        dist.isend_tensor(torch.ones(64), dist.mapping.next_pp_rank(), tag=5).wait()
    else:
        dist.recv_object(dist.mapping.prev_pp_rank(), tag=4)
        h = dist.irecv_tensor(torch.empty(64), dist.mapping.prev_pp_rank(), tag=5)
        dist.advance(0.0005)
        h.wait()
    return dist.clock.events


@pytest.mark.timeout(120)
def test_same_timeline_on_both_backends():
    spec = trtsim.InstanceSpec(tp_size=2, pp_size=2)
    a = run_ranks([InstanceLayout("", "", spec)], timeline_program, (), LaunchConfig("inproc"))
    b = run_ranks([InstanceLayout("", "", spec)], timeline_program, (), LaunchConfig("gloo"))
    assert a.error is None and b.error is None
    assert a.results == b.results
