"""relaxed_accept: the numba twin against the plain reference, and CUDA against the twin."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import FLOAT_DTYPES, gpu, kernel_settings, ref_relaxed_accept
from trtsim.kernels import relaxed_accept

DTYPES = FLOAT_DTYPES
SETTINGS = kernel_settings(60)
BEGIN, END = 7, 8


def make_case(seed, num_context, num_gen, k, topk, dtype, idx_dtype, accept_rate, num_slots):
    """Sorted top-k probabilities with ties, drafts drawn from the top-k (often) or elsewhere,
    thinking tokens sprinkled in, and random distinct slots with random initial deltas."""
    g = torch.Generator().manual_seed(seed)
    rows = num_context + num_gen * (k + 1)
    vals = torch.randint(0, 6, (rows, topk), generator=g).float() / 8
    vals = torch.sort(vals, dim=1, descending=True).values.to(dtype)
    idx = torch.stack([torch.randperm(12, generator=g)[:topk] for _ in range(rows)]) \
        if rows else torch.zeros((0, topk), dtype=torch.int64)
    drafts = []
    for gi in range(num_gen):
        for j in range(k):
            row = num_context + gi * (k + 1) + j
            if float(torch.rand(1, generator=g)) < accept_rate:
                drafts.append(int(idx[row, int(torch.randint(topk, (1,), generator=g))]))
            else:
                drafts.append(int(torch.randint(12, (1,), generator=g)))
    slots = torch.randperm(num_slots, generator=g)[:num_context + num_gen]
    delta = [float(x) for x in (torch.randint(0, 3, (num_slots,), generator=g).float() / 8)]
    return (vals, idx.to(idx_dtype), torch.tensor(drafts, dtype=torch.int32), slots.int(),
            delta)


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_context=st.integers(0, 3), num_gen=st.integers(0, 4),
       k=st.integers(0, 4), topk=st.integers(1, 5), dtype=st.sampled_from(DTYPES),
       idx_dtype=st.sampled_from((torch.int32, torch.int64)),
       accept_rate=st.sampled_from((0.0, 0.6, 1.0)), relaxed=st.sampled_from((0.0, 0.25, 0.5)))
def test_cpu_matches_reference(seed, num_context, num_gen, k, topk, dtype, idx_dtype,
                               accept_rate, relaxed):
    vals, idx, drafts, slots, delta = make_case(seed, num_context, num_gen, k, topk, dtype,
                                                idx_dtype, accept_rate, 8)
    pool = torch.tensor(delta, dtype=torch.float32)
    accepted, num = relaxed_accept(vals, idx, drafts, slots, pool, num_context, k, relaxed,
                                   BEGIN, END)
    ref_acc, ref_num, ref_delta = ref_relaxed_accept(vals, idx, drafts, slots, delta,
                                                     num_context, k, relaxed, BEGIN, END)
    assert accepted.tolist() == ref_acc
    assert num.tolist() == ref_num
    assert pool.tolist() == ref_delta


def test_thinking_flips_delta():
    # one generation request, K=2: drafts [BEGIN, 3] both top-1 -> accepted, bonus END
    vals = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1]])
    idx = torch.tensor([[BEGIN, 1], [3, 2], [END, 4]])
    pool = torch.tensor([0.0, 0.3])
    acc, num = relaxed_accept(vals, idx, torch.tensor([BEGIN, 3]), torch.tensor([1]), pool, 0, 2,
                              0.5, BEGIN, END)
    assert acc.tolist() == [[BEGIN, 3, END]] and num.tolist() == [3]
    assert pool.tolist() == [0.0, 0.0]  # END came last
    # within delta: the second candidate (0.45 >= 0.9 - 0.5) is accepted
    vals = torch.tensor([[0.5, 0.45], [0.9, 0.05]])
    idx = torch.tensor([[1, 2], [5, 6]])
    pool = torch.tensor([0.5])
    acc, num = relaxed_accept(vals, idx, torch.tensor([2]), torch.tensor([0]), pool, 0, 1, 0.5,
                              BEGIN, END)
    assert acc.tolist() == [[2, 5]] and pool.tolist() == [0.5]
    pool = torch.tensor([0.0])  # outside thinking: only top-1
    acc, _ = relaxed_accept(vals, idx, torch.tensor([2]), torch.tensor([0]), pool, 0, 1, 0.5,
                            BEGIN, END)
    assert acc.tolist() == [[1, -1]]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idx_dtype", (torch.int32, torch.int64))
def test_cuda_matches_cpu(dtype, idx_dtype):
    for seed in range(6):
        vals, idx, drafts, slots, delta = make_case(seed, 3, 300, 3, 4, dtype, idx_dtype, 0.7,
                                                    512)
        pool_cpu = torch.tensor(delta)
        pool_gpu = pool_cpu.cuda()
        want = relaxed_accept(vals, idx, drafts, slots, pool_cpu, 3, 3, 0.25, BEGIN, END)
        got = relaxed_accept(vals.cuda(), idx.cuda(), drafts.cuda(), slots.cuda(), pool_gpu, 3, 3,
                             0.25, BEGIN, END)
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
        assert torch.equal(pool_gpu.cpu(), pool_cpu)
