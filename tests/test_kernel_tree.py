"""Dynamic-tree build (top-k expansion, candidate selection, SGLang links) and greedy tree
verification: numba twins against the plain references; CUDA against the twins."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import (gpu, kernel_settings, random_layout, ref_build_tree,
                                    ref_verify_tree)
from trtsim.kernels import (build_dynamic_tree, expand_tree_level, select_tree_candidates,
                            verify_tree_greedy)

SETTINGS = kernel_settings(60)


def draft_tree(seed, bs, topk, depth, n, vocab=6, quantized=True):
    """Greedy top-k expansion over random drafter distributions, then the N-1 best candidates.
    Quantized probabilities make ties in the scores common."""
    g = torch.Generator().manual_seed(seed)

    def dist(rows):
        p = torch.rand(rows, vocab, generator=g)
        if quantized:
            p = torch.floor(p * 4) + 1
        p = p / p.sum(-1, keepdim=True)
        return torch.topk(p, topk, dim=-1)

    levels, scores = [], None
    for level in range(depth):
        p, idx = dist(bs if level == 0 else bs * topk)
        lv = expand_tree_level(level, p, idx, scores, topk)
        levels.append(lv)
        scores = lv.scores
    verified = torch.randint(0, vocab, (bs,), generator=g)
    parent_list, selected, drafts = select_tree_candidates(levels, verified, n)
    seq_len = torch.randint(0, 50, (bs,), generator=g)
    return parent_list, selected, seq_len, drafts


def assert_tree_equal(got, want):
    names = ("tree_mask", "positions", "retrive_index", "next_token", "next_sibling")
    for name, a, b in zip(names, got, want):
        assert a.tolist() == b.tolist(), name


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), bs=st.integers(1, 3), topk=st.integers(1, 4),
       depth=st.integers(1, 5), extra=st.integers(0, 30), quantized=st.booleans())
def test_build_matches_reference(seed, bs, topk, depth, extra, quantized):
    total = topk + (depth - 1) * topk * topk
    n = 1 + min(total, 1 + extra)
    parent_list, selected, seq_len, _ = draft_tree(seed, bs, topk, depth, n, quantized=quantized)
    got = build_dynamic_tree(parent_list, selected, seq_len, topk)
    assert got[0].dtype == torch.bool and got[1].shape == (bs * n,)
    assert_tree_equal(got, ref_build_tree(parent_list, selected, seq_len, topk))


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), topk=st.integers(2, 3), depth=st.integers(2, 4),
       corrupt=st.lists(st.integers(0, 100), min_size=1, max_size=3))
def test_build_orphans_match_reference(seed, topk, depth, corrupt):
    n = 1 + topk + (depth - 1) * topk * topk // 2
    parent_list, selected, seq_len, _ = draft_tree(seed, 2, topk, depth, n)
    total = topk + (depth - 1) * topk * topk
    for c in corrupt:  # replace a kept candidate: its parent or children may go missing
        selected[c % 2, (c // 2) % (n - 1)] = (c * 7) % total - (c % 5 == 0)
    got = build_dynamic_tree(parent_list, selected, seq_len, topk)
    assert_tree_equal(got, ref_build_tree(parent_list, selected, seq_len, topk))


def test_single_level_and_chain():
    # one level: every node is a child of the root, siblings in node order
    parent_list, selected, seq_len, _ = draft_tree(0, 1, 4, 1, 5)
    mask, pos, _, nxt, sib = build_dynamic_tree(parent_list, selected, seq_len, 4)
    assert nxt[0].tolist() == [1, -1, -1, -1, -1] and sib[0].tolist() == [-1, 2, 3, 4, -1]
    assert (pos - int(seq_len[0])).tolist() == [0, 1, 1, 1, 1]
    # topk 1: a chain
    parent_list, selected, seq_len, _ = draft_tree(1, 1, 1, 4, 5)
    mask, pos, _, nxt, sib = build_dynamic_tree(parent_list, selected, seq_len, 1)
    assert nxt[0].tolist() == [1, 2, 3, 4, -1] and (sib[0] == -1).all()
    assert mask[0].int().tolist() == torch.tril(torch.ones(5, 5, dtype=torch.int)).tolist()


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), bs=st.integers(0, 4), n=st.integers(1, 12),
       s=st.integers(1, 8), vocab=st.integers(1, 4),
       dtype=st.sampled_from((torch.int32, torch.int64)))
def test_verify_matches_reference(seed, bs, n, s, vocab, dtype):
    cand, ridx, nxt, sib, target = random_layout(seed, bs, n, vocab)
    args = [t.to(dtype) for t in (cand, ridx, nxt, sib, target)]
    predicts, accept_index, accept_num = verify_tree_greedy(*args, s)
    want = ref_verify_tree(cand, ridx, nxt, sib, target, s)
    assert predicts.tolist() == want[0]
    assert accept_index.tolist() == want[1]
    assert accept_num.tolist() == want[2]


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), topk=st.integers(1, 3), depth=st.integers(1, 4))
def test_verify_on_built_trees(seed, topk, depth):
    n = 1 + min(topk + (depth - 1) * topk * topk, 8)
    parent_list, selected, seq_len, drafts = draft_tree(seed, 3, topk, depth, n, vocab=3)
    _, _, ridx, nxt, sib = build_dynamic_tree(parent_list, selected, seq_len, topk)
    target = torch.randint(0, 3, (3, n), generator=torch.Generator().manual_seed(seed))
    got = verify_tree_greedy(drafts, ridx, nxt, sib, target, depth + 1)
    want = ref_verify_tree(drafts, ridx, nxt, sib, target, depth + 1)
    assert [t.tolist() for t in got] == list(want)


def test_verify_full_acceptance_of_a_chain():
    cand = torch.tensor([[9, 1, 2, 3]])
    nxt = torch.tensor([[1, 2, 3, -1]])
    sib = torch.full((1, 4), -1)
    target = torch.tensor([[1, 2, 3, 4]])
    predicts, accept_index, num = verify_tree_greedy(cand, torch.arange(4)[None], nxt, sib,
                                                     target, 4)
    assert predicts.tolist() == [1, 2, 3, 4] and accept_index.tolist() == [[0, 1, 2, 3]]
    assert num.tolist() == [3]
    predicts, accept_index, num = verify_tree_greedy(cand, torch.arange(4)[None], nxt, sib,
                                                     target, 2)  # S caps the path
    assert predicts.tolist() == [1, 2, -1, -1] and accept_index.tolist() == [[0, 1]]


@gpu
def test_cuda_matches_cpu():
    for seed, (bs, topk, depth, n) in enumerate([(1, 4, 5, 64), (256, 2, 4, 15), (64, 8, 3, 60),
                                                 (7, 1, 6, 7), (3, 10, 8, 700)]):
        parent_list, selected, seq_len, drafts = draft_tree(seed, bs, topk, depth, n, vocab=40)
        if seed == 2:
            selected[:, ::5] = (selected[:, ::5] * 13) % (topk + (depth - 1) * topk * topk)
        want = build_dynamic_tree(parent_list, selected, seq_len, topk)
        got = build_dynamic_tree(parent_list.cuda(), selected.cuda(), seq_len.cuda(), topk)
        assert_tree_equal([t.cpu() for t in got], want)
        ridx, nxt, sib = want[2:]
        target = torch.randint(0, 40, (bs, n), generator=torch.Generator().manual_seed(seed))
        target = torch.where(torch.rand(bs, n) < 0.7, drafts.roll(-1, 1), target)
        for dtype in (torch.int32, torch.int64):
            args = [t.to(dtype) for t in (drafts, ridx, nxt, sib, target)]
            want_v = verify_tree_greedy(*args, depth + 1)
            got_v = verify_tree_greedy(*(t.cuda() for t in args), depth + 1)
            for a, b in zip(got_v, want_v):
                assert torch.equal(a.cpu(), b)


@gpu
@pytest.mark.parametrize("n,s", [(1, 1), (5, 1), (1024, 16), (3000, 8)])
def test_cuda_verify_random_layouts(n, s):
    cand, ridx, nxt, sib, target = random_layout(n, 5, n, 2)
    want = verify_tree_greedy(cand, ridx, nxt, sib, target, s)
    got = verify_tree_greedy(*(t.cuda() for t in (cand, ridx, nxt, sib, target)), s)
    for a, b in zip(got, want):
        assert torch.equal(a.cpu(), b)
