"""A mismatch report shows where the members' purposes part: per rank, the frames the others
did not come through (two ranks entering one coordinator method from different places share
its call site, so the site alone hides the divergence)."""

from hypothesis import given, strategies as st

import trtsim
from trtsim.calls.purpose_paths import SEP, distinct_paths

frames = st.lists(st.sampled_from(["step", "loop", "gather", "reduce", "send", "helper"]),
                  max_size=5)


@given(purposes=st.dictionaries(st.integers(0, 7), frames.map(SEP.join), min_size=1,
                                max_size=4))
def test_paths_exist_exactly_when_purposes_differ_and_tell_them_apart(purposes):
    paths = distinct_paths(purposes)
    if len(set(purposes.values())) < 2:
        assert paths == {}
        return
    assert set(paths) == set(purposes)
    # equal purposes give equal paths, different purposes different ones
    for a in purposes:
        for b in purposes:
            assert (paths[a] == paths[b]) == (purposes[a] == purposes[b]), (purposes, paths)


def test_the_path_runs_from_where_the_chains_part_outermost_first():
    paths = distinct_paths({0: "Coord.all_reduce < loop",
                            1: "Coord.all_reduce < tp_all_reduce < dp_gather < loop"})
    assert paths == {0: "loop", 1: "loop -> dp_gather -> tp_all_reduce"}


def _one_helper(dist, skip):
    def all_gather(value):                  # one coordinator method: one call site
        return dist.tp_allgather(value)

    def gather_tokens():
        return all_gather(1)

    def step_sync():
        return all_gather(2)

    if dist.rank == 1 and skip:
        return step_sync()
    return gather_tokens()


def test_a_report_of_one_call_site_reached_two_ways_names_both_paths():
    try:
        trtsim.launch(_one_helper, tp=2, args=(True,))
    except trtsim.CollectiveMismatch as err:
        text = str(err)
    else:
        raise AssertionError("the divergent purposes were not reported")
    assert "via _one_helper -> _one_helper.<locals>.gather_tokens\n" in text, text
    assert "via _one_helper -> _one_helper.<locals>.step_sync\n" in text, text


def test_calls_from_one_path_get_no_via_line():
    assert trtsim.launch(_one_helper, tp=2, args=(False,)) == [[1, 1], [1, 1]]
