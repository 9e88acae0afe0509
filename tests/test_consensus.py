"""Consensus as pure functions."""

from hypothesis import given, strategies as st

from trtsim.disagg.consensus import combine_outcomes, find_consensus_request_ids

ids = st.lists(st.integers(0, 9), max_size=8)


@given(st.lists(ids, min_size=1, max_size=6))
def test_consensus_is_the_ids_every_member_reports(lists):
    got = find_consensus_request_ids(lists, len(lists))
    assert set(got) == set.intersection(*(set(x) for x in lists))
    assert len(got) == len(set(got))


def test_duplicates_on_one_rank_do_not_count_twice():
    assert find_consensus_request_ids([[1, 1], [2]], 2) == []


def test_single_member_group():
    assert find_consensus_request_ids([[3, 1, 2]], 1) == [3, 1, 2]


@given(st.lists(st.tuples(ids, ids, ids), min_size=1, max_size=5), ids)
def test_outcome_precedence_and_agreement(per_rank, to_process):
    c, f, d = combine_outcomes(to_process, *(list(x) for x in zip(*per_rank)))
    assert not (set(c) & set(f)) and not (set(c) & set(d)) and not (set(f) & set(d))
    for rid in c:
        assert any(rid in r[0] for r in per_rank)
    for rid in f:
        assert any(rid in r[1] for r in per_rank)
    for rid in d:
        assert all(rid in r[2] for r in per_rank)
