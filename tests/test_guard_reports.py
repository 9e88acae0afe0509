"""Each kind of asymmetry is reported with the right group, ranks and call sites (inproc)."""

import json

import pytest

import trtsim
from tests import programs


def report(prog, *, tp=2, pp=2, **kw):
    with pytest.raises(trtsim.CollectiveError) as info:
        trtsim.launch(prog, tp=tp, pp=pp, **kw)
    return info.value


@pytest.mark.parametrize("labelled", [False, True])
def test_skipped_call_is_caught_by_iteration_even_without_labels(labelled):
    err = report(programs.skip_pp_allgather, args=(labelled,))
    assert isinstance(err, trtsim.CollectiveMismatch)
    assert (err.group_kind, err.group_ranks, err.ranks) == ("pp", (0, 2), (0, 2))
    assert err.calls[0].iteration == 1 and err.calls[2].iteration == 2
    assert err.calls[0].seq == err.calls[2].seq == 2
    assert all("programs.py" in c.callsite and "skip_pp_allgather" in c.callsite
               for c in err.calls.values())
    assert ("rank 2 reached pp_allgather #2 in iteration 2 while rank 0 is still in "
            "iteration 1: rank 2 skipped a call") in str(err)


@pytest.mark.parametrize("prog,field", [
    (programs.op_mismatch, "op"), (programs.root_mismatch, "root"),
    (programs.reduce_op_mismatch, "reduce_op"), (programs.shape_mismatch, "signature"),
    (programs.label_mismatch, "label"), (programs.purpose_mismatch, "purpose"),
])
def test_mismatch_kinds_name_the_field_group_and_ranks(prog, field):
    err = report(prog, tp=2, pp=1)
    assert isinstance(err, trtsim.CollectiveMismatch)
    assert err.group_kind == "tp" and err.group_ranks == (0, 1) and err.ranks == (0, 1)
    assert f"differs in {field}" in err.summary
    assert set(err.calls) == {0, 1}
    sites = {c.callsite for c in err.calls.values()}
    assert all("programs.py" in s for s in sites)
    if field == "purpose":
        assert len(sites) == 2 and "_gather_states" in err.summary and "_gather_votes" in err.summary
        assert "declare the function a wrapper" in err.explanation


def test_cross_group_wait_cycle():
    err = report(programs.cross_group_cycle)
    assert isinstance(err, trtsim.CollectiveDeadlock)
    assert err.ranks == (0, 1, 2, 3) and set(err.calls) == {0, 1, 2, 3}
    assert err.explanation.startswith("cross-group wait cycle")
    assert {c.group_kind for c in err.calls.values()} == {"tp", "pp"}


def test_early_exit():
    err = report(programs.early_exit)
    assert isinstance(err, trtsim.CollectiveDeadlock)
    assert err.group_kind == "tp" and err.group_ranks == (2, 3) and err.ranks == (2, 3)
    assert set(err.calls) == {2}
    assert "rank 3 returned while rank 2 waits in tp_allgather #2 'b'" in err.explanation


def _stuck_in_stages(dist):
    """Rank 0 returns; rank 1 waits for it in their TP gather at once, while ranks 2 and 3
    first work among themselves and then wait for both in a world barrier."""
    if dist.rank == 0:
        return
    if dist.rank == 1:
        dist.tp_allgather(1, label="state")
    for i in range(20):
        dist.tp_allgather(i, label="warmup")
    dist.barrier()


def test_a_deadlock_is_reported_the_same_on_every_schedule():
    # The stuck set forms when rank 1 blocks; ranks 2 and 3 join it later. The report waits
    # for them, so no schedule reports a smaller set.
    reports = {str(report(_stuck_in_stages, seed=seed)) for seed in range(12)}
    assert len(reports) == 1, reports
    err = report(_stuck_in_stages)
    assert isinstance(err, trtsim.CollectiveDeadlock) and err.ranks == (0, 1, 2, 3)
    assert set(err.calls) == {1, 2, 3}


def test_p2p_tag_mismatch():
    err = report(programs.p2p_tag_mismatch)
    assert isinstance(err, trtsim.CollectiveDeadlock)
    assert err.calls[1].op == "recv_object" and err.calls[1].tag == 2
    assert "rank 1 waits for tag 2 from rank 0, which sends tag 1: p2p tag mismatch" in err.explanation


def test_skip_followed_by_another_group_is_a_skip_not_a_mystery():
    def prog(dist):
        for it in range(2):
            dist.set_iteration(it)
            if not (dist.rank == 2 and it == 0):
                dist.pp_allgather(dist.rank, label="gen_consensus")
            dist.tp_allgather(dist.rank, label="tp_state")
        dist.barrier()

    err = report(prog)
    assert isinstance(err, (trtsim.CollectiveDeadlock, trtsim.CollectiveMismatch))
    assert "rank 2" in err.explanation and "skipped" in err.explanation


def test_raising_rank_carries_rank_and_traceback():
    err = report(programs.raising_rank)
    assert isinstance(err, trtsim.RankFailed) and err.rank == 1 and err.ranks == (1,)
    assert "RuntimeError: boom on rank 1" in err.traceback
    assert "programs.py" in err.traceback and "raising_rank" in err.traceback


def test_busy_rank_hits_the_timeout():
    err = report(programs.busy_loop, timeout=0.5)
    assert isinstance(err, trtsim.CollectiveTimeout)
    assert "timed out after 0.5 s" in str(err)


def test_report_is_json_and_readable():
    err = report(programs.skip_pp_allgather, args=(True,))
    data = json.loads(json.dumps(err.to_dict()))
    assert data["type"] == "CollectiveMismatch" and data["group_ranks"] == [0, 2]
    assert data["calls"]["2"]["label"] == "gen_consensus"
    text = str(err)
    lines = text.splitlines()
    assert lines[0].startswith("CollectiveMismatch: pp group [0, 2]")
    assert any(l.strip().startswith("rank 0: pp_allgather #2 'gen_consensus' iter 1") for l in lines)
    assert lines[-1].strip().startswith("likely: rank 2 reached pp_allgather #2")


def test_errors_survive_pickling():
    import pickle
    err = report(programs.cross_group_cycle)
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.ranks == err.ranks


def test_guard_off_pairs_calls_silently_like_gloo():
    """DESIGN 4: without the guard the skipping rank's next call pairs with its peer's
    pending one; the run ends in a hang on the peer, not at the divergent call."""
    err = report(programs.skip_pp_allgather, guard="off")
    assert isinstance(err, trtsim.CollectiveDeadlock)
    assert err.ranks == (0, 2) and set(err.calls) == {0}
    assert err.calls[0].iteration == 2
