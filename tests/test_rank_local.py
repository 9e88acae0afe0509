"""Per-rank module globals on inproc (``launch(..., rank_local=(...))``): a framework's
module imported once, whose globals every rank sets, holds each rank's own values across
hand-overs; modules first imported inside a rank too; the process's copy is untouched."""

import pytest

import trtsim
from tests.rank_state import bound, groups   # imported once, at the top, as a test file would


def program(dist):
    groups.init(dist.global_rank, dist.world_size)
    for step in range(3):
        groups.record((dist.global_rank, step))
        dist.allgather(step)                 # every rank runs between two steps
    from tests.rank_state import late       # first imported inside a rank
    mine = late.bump(dist.global_rank + 1)
    dist.barrier()
    return groups.world(), dict(groups._groups), groups.history(), mine, late.bump(0)


@pytest.mark.parametrize("intercept", [(), ("torch",)])
def test_every_rank_sees_its_own_globals(intercept):
    results = trtsim.launch(program, tp=2, pp=2, rank_local=("tests.rank_state",),
                            intercept=intercept, timeout=60)
    for r, (world, registry, history, mine, again) in enumerate(results):
        assert world == r
        assert registry == {"tp": (r // 2, 4)}
        assert history == [(r, 0), (r, 1), (r, 2)]
        assert mine == again == r + 1


def test_without_rank_local_the_ranks_share_one_copy():
    with pytest.raises(trtsim.RankFailed, match="already initialised by rank"):
        trtsim.launch(program, tp=2, timeout=60)
    groups._WORLD = None
    groups._groups.clear()
    groups._history.clear()


def test_the_process_copy_is_as_before_the_launch():
    groups._groups["mine"] = "test"
    trtsim.launch(program, tp=2, rank_local=("tests.rank_state",), timeout=60)
    assert groups.world() is None and groups._groups == {"mine": "test"}
    assert groups.history() == []
    groups._groups.clear()


def test_the_same_seed_gives_the_same_results():
    def run(seed):
        return trtsim.launch(program, tp=4, rank_local=("tests.rank_state",), seed=seed,
                             timeout=60)
    assert run(3) == run(3)


@pytest.mark.parametrize("bad", ["tests", ("",), ("trtsim.comm",), ("torch",), (1,)])
def test_bad_names_fail_before_any_rank_starts(bad):
    with pytest.raises(ValueError, match="rank_local="):
        trtsim.launch(program, tp=2, rank_local=bad)


def test_a_context_object_filled_in_place_is_each_ranks_own():
    from tests.rank_state import alias, context

    def prog(dist):
        context.context().values["rank"] = dist.global_rank
        dist.barrier()
        return context.context().values, alias.same_context(), context.MISSING is alias.MISSING

    for r, (values, same, sentinel) in enumerate(
            trtsim.launch(prog, tp=4, rank_local=("tests.rank_state",), timeout=60)):
        assert values == {"rank": r} and same and sentinel
    assert context.context().values == {}


def test_torch_functions_bound_before_the_launch_are_guarded_in_the_ranks():
    import torch.distributed as tdist

    def prog(dist):
        tdist.init_process_group("gloo")
        if dist.global_rank == 1:
            return None                      # skips both: the others' gather is unmatched
        return bound.gather_and_sum(dist.global_rank, dist.world_size)

    def legal(dist):
        tdist.init_process_group("gloo")
        return bound.gather_and_sum(dist.global_rank, dist.world_size)

    results = trtsim.launch(legal, tp=2, rank_local=("tests.rank_state",), intercept=("torch",),
                            timeout=60)
    assert results == [([0.0, 1.0], 2.0)] * 2
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        trtsim.launch(prog, tp=2, rank_local=("tests.rank_state",), intercept=("torch",),
                      timeout=60)
    assert {c.api for c in info.value.calls.values()} == {f"torch.{bound.GATHER_NAME}"}
    assert bound.gather_into is getattr(tdist.distributed_c10d, bound.GATHER_NAME)
