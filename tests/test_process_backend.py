"""The process backend (gloo): same results as inproc, the same reports, clean teardown.

Ranks fork from a warm server, so after the first launch each costs a fraction of a second;
still, keep this file small: most topology tests belong on the inproc backend.
"""

import os
import signal
import time

import pytest

import trtsim
from tests import programs
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.layout import InstanceLayout

pytestmark = pytest.mark.timeout(120)


def run(prog, tp=2, pp=2, adp=False, backend="gloo", guard="strict", args=(), timeout=60):
    spec = trtsim.InstanceSpec(tp_size=tp, pp_size=pp, enable_attention_dp=adp)
    return run_ranks([InstanceLayout("", "", spec)], prog, args,
                     LaunchConfig(backend, guard, 0, timeout))


def _alive(pid: int) -> bool:
    """Running (a zombie awaiting its reaper has already ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def assert_gone(pids, within=10.0):
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = [p for p in pids if _alive(p)]
    assert not alive, f"rank processes {alive} outlived their launch"


def assert_outcome_gone(outcome):
    assert_gone([extra["pid"] for extra in outcome.extras])


@pytest.mark.parametrize("prog,tp,pp,adp", [
    (programs.gathers, 2, 2, False), (programs.tensors, 2, 3, False),
    (programs.pp_group_skip_under_adp, 4, 2, True), (programs.nonblocking_p2p, 2, 1, False),
])
def test_same_results_as_inproc(prog, tp, pp, adp):
    a = run(prog, tp, pp, adp, backend="inproc")
    b = run(prog, tp, pp, adp, backend="gloo")
    assert a.error is None and b.error is None
    assert _plain(a.results) == _plain(b.results)
    assert a.census == b.census
    assert a.divergences == b.divergences
    assert_outcome_gone(b)


def _plain(x):
    import torch
    if isinstance(x, torch.Tensor):
        return ("tensor", x.dtype, x.tolist())
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


@pytest.mark.parametrize("prog,kind,group,ranks", [
    (programs.skip_pp_allgather, trtsim.CollectiveMismatch, (0, 2), (0, 2)),
    (programs.cross_group_cycle, trtsim.CollectiveDeadlock, None, (0, 1, 2, 3)),
    (programs.early_exit, trtsim.CollectiveDeadlock, (2, 3), (2, 3)),
    (programs.p2p_tag_mismatch, trtsim.CollectiveDeadlock, None, None),
    (programs.raising_rank, trtsim.RankFailed, None, (1,)),
    (programs.op_mismatch, trtsim.CollectiveMismatch, None, None),   # either TP group
])
def test_violations_reported_like_inproc(prog, kind, group, ranks):
    inproc = run(prog, backend="inproc").error
    out = run(prog)
    err = out.error
    assert isinstance(err, kind) and type(inproc) is type(err)
    if group is not None:
        assert err.group_ranks == group
    if ranks is not None:
        assert err.ranks == ranks
    if kind is trtsim.CollectiveMismatch:
        assert err.ranks == err.group_ranks
        assert err.explanation.replace("3", "1").replace("2", "0") == \
            inproc.explanation.replace("3", "1").replace("2", "0")
    else:
        assert err.explanation == inproc.explanation
    assert_outcome_gone(out)


def test_slow_rank_is_not_a_deadlock():
    out = run(programs.slow_rank, tp=2, pp=1, args=(0.3,))
    assert out.error is None and out.results == [0, 1]


def test_killed_rank_is_named_with_its_signal():
    out = run(_killed)
    assert isinstance(out.error, trtsim.RankFailed)
    assert out.error.rank == 3 and out.error.signal == signal.SIGKILL
    assert "rank 3 was killed by SIGKILL" in str(out.error)
    assert_outcome_gone(out)


def _killed(dist):
    dist.barrier()
    if dist.rank == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.barrier()


def test_unpicklable_result_is_a_clear_rank_failure():
    out = run(_unpicklable, tp=2, pp=1)
    assert isinstance(out.error, trtsim.RankFailed)
    assert "result cannot travel back to the launcher" in str(out.error)


def _unpicklable(dist):
    return lambda: dist.rank


def test_unpicklable_program_is_refused_before_spawning():
    with pytest.raises(ValueError, match="rank program must be picklable"):
        trtsim.launch(lambda d: None, tp=2, backend="gloo")


def test_timeout_ends_every_rank():
    out = run(programs.busy_loop, tp=2, pp=1, timeout=3)
    assert isinstance(out.error, trtsim.CollectiveTimeout)
    assert "rank 0: running" in str(out.error)
    assert_outcome_gone(out)


def test_lockstep_on_processes():
    out = run(programs.pp_group_skip_under_adp, tp=4, pp=2, adp=True, guard="lockstep")
    assert isinstance(out.error, trtsim.CollectiveMismatch) and out.error.ranks == (0, 4)


