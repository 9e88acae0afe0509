"""relocate_kv: accepted tree paths moved to linear positions; against the reference and
CUDA against the CPU twin."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import (FLOAT_DTYPES, gpu, kernel_settings, random_layout,
                                    ref_relocate_kv)
from trtsim.kernels import relocate_kv, verify_tree_greedy

DTYPES = (*FLOAT_DTYPES, torch.uint8)
SETTINGS = kernel_settings(50)


def make_case(seed, bs, n, s, planes, d, dtype, max_seq=40, num_slots=None, shuffled=False):
    g = torch.Generator().manual_seed(seed)
    cand, ridx, nxt, sib, target = random_layout(seed, bs, n, 2)
    if shuffled:  # any accepted indices, not only tree paths
        accept_index = torch.randint(0, n, (bs, s), generator=g) + torch.arange(bs)[:, None] * n
        accept_num = torch.randint(0, s, (bs,), generator=g).int()
    else:
        _, accept_index, accept_num = verify_tree_greedy(cand, ridx, nxt, sib, target, s)
    num_slots = num_slots or bs + 2
    slots = torch.randperm(num_slots, generator=g)[:bs].int()
    past = torch.randint(0, max_seq - 2, (bs,), generator=g)
    kv = (torch.randn(planes, num_slots, max_seq, d, generator=g) * 50).to(dtype)
    return kv, accept_index, accept_num, past, slots


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), bs=st.integers(0, 4), n=st.integers(1, 12),
       s=st.integers(1, 6), planes=st.integers(1, 3), d=st.integers(1, 9),
       dtype=st.sampled_from(DTYPES), use_slots=st.booleans(), shuffled=st.booleans())
def test_cpu_matches_reference(seed, bs, n, s, planes, d, dtype, use_slots, shuffled):
    kv, accept_index, accept_num, past, slots = make_case(seed, bs, n, s, planes, d, dtype,
                                                          shuffled=shuffled)
    slots = slots if use_slots else None
    want = ref_relocate_kv(kv, accept_index, accept_num, past, n, slots)
    relocate_kv(kv, accept_index, accept_num, past, n, slots)
    assert torch.equal(kv, want)


def test_path_lands_linearly():
    kv = torch.arange(8, dtype=torch.float32).reshape(1, 1, 8, 1)  # one slot, 8 positions
    # tree rows at 2..6 (root at 2); accepted path: root, node 2, node 4
    relocate_kv(kv, torch.tensor([[0, 2, 4, -1]]), torch.tensor([2]), torch.tensor([2]), 5)
    assert kv.reshape(-1).tolist() == [0, 1, 2, 4, 6, 5, 6, 7]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d", (576, 1, 3, 1024))
def test_cuda_matches_cpu(dtype, d):
    for seed, shuffled in enumerate((False, True)):
        kv, accept_index, accept_num, past, slots = make_case(seed, 64, 16, 6, 4, d, dtype,
                                                              max_seq=64, num_slots=80,
                                                              shuffled=shuffled)
        kv_gpu = kv.cuda()
        relocate_kv(kv, accept_index, accept_num, past, 16, slots)
        relocate_kv(kv_gpu, accept_index.cuda(), accept_num.cuda(), past.cuda(), 16, slots.cuda())
        assert torch.equal(kv_gpu.cpu(), kv)
