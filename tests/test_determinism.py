"""Same seed, same interleaving, same results, on the inproc backend."""

import trtsim
from tests import programs


def trace_of(seed, tp=4, pp=2):
    order = []

    def prog(dist):
        for it in range(3):
            dist.set_iteration(it)
            order.append((dist.rank, "tp", it))
            dist.tp_allgather(dist.rank, label="tp")
            order.append((dist.rank, "pp", it))
            dist.pp_allgather(dist.rank, label="pp")
        return dist.rank

    results = trtsim.launch(prog, tp=tp, pp=pp, seed=seed)
    return order, results


def test_same_seed_same_interleaving():
    for seed in (0, 1, 12345):
        assert trace_of(seed) == trace_of(seed)


def test_seed_changes_the_interleaving_not_the_results():
    traces = {tuple(trace_of(seed)[0]) for seed in range(5)}
    assert len(traces) > 1
    assert {tuple(trace_of(seed)[1]) for seed in range(5)} == {tuple(range(8))}


def test_reports_are_deterministic():
    def report(seed):
        try:
            trtsim.launch(programs.cross_group_cycle, tp=2, pp=2, seed=seed)
        except trtsim.CollectiveError as err:
            return str(err)
        raise AssertionError("the cross-group cycle ran to the end: no report to compare")

    first = report(3)
    assert "CollectiveDeadlock" in first and "cross-group wait cycle" in first
    assert report(3) == first
