"""Strict mode checks each group on its own; lockstep adds the world-wide-barrier assumption."""

import pytest

import trtsim
from tests import programs
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.run_ranks import run_ranks
from trtsim.layout import InstanceLayout


def outcome(prog, guard, tp=4, pp=2, adp=True):
    spec = trtsim.InstanceSpec(tp_size=tp, pp_size=pp, enable_attention_dp=adp)
    return run_ranks([InstanceLayout("", "", spec)], prog, (), LaunchConfig(guard=guard))


def test_whole_pp_group_skip_is_legal_in_strict_mode_and_noted():
    out = outcome(programs.pp_group_skip_under_adp, "strict")
    assert out.error is None
    kinds = {(d.group_kind, d.label) for d in out.divergences}
    assert kinds == {("pp", "gen_consensus")}
    first = out.divergences[0]
    assert first.iteration == 0 and first.other_ranks == (0, 4)


def test_lockstep_reports_the_skipping_group():
    out = outcome(programs.pp_group_skip_under_adp, "lockstep")
    err = out.error
    assert isinstance(err, trtsim.CollectiveMismatch)
    assert err.group_kind == "pp" and err.ranks == (0, 4)
    assert "skipped pp_allgather 'gen_consensus' in iteration 0" in err.explanation


def test_lockstep_accepts_groups_in_step():
    assert outcome(programs.gathers, "lockstep", tp=2, pp=2, adp=False).error is None


def test_guard_off_notes_nothing():
    out = outcome(programs.pp_group_skip_under_adp, "off")
    assert out.error is None and out.divergences == []


@pytest.mark.parametrize("guard", ["strict", "lockstep"])
def test_label_divergence_between_tp_groups(guard):
    def prog(dist):
        dist.set_iteration(0)
        dist.tp_allgather(1, label="first" if dist.pp_rank == 0 else "second")
        dist.set_iteration(1)

    out = outcome(prog, guard, tp=2, pp=2, adp=False)
    assert [(d.group_kind, d.iteration) for d in out.divergences] == [("tp", 0)]
    assert (out.error is not None) == (guard == "lockstep")
