"""update_hidden_ring: in-place ring shift (overlapping) against the reference; CUDA vs CPU."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import (FLOAT_DTYPES, gpu, kernel_settings, ragged_batch,
                                    ref_update_ring)
from trtsim.kernels import update_hidden_ring

DTYPES = FLOAT_DTYPES
SETTINGS = kernel_settings(50)


def make_case(seed, num_context, num_gen, k, h, dtype, num_slots=16, max_prompt=9):
    g = torch.Generator().manual_seed(seed)
    input_ids, seq_lens, hidden = ragged_batch(g, num_context, num_gen, k, h, dtype, max_prompt)
    num_acc = torch.randint(1, k + 2, (num_context + num_gen,), generator=g).int()
    slots = torch.randperm(num_slots, generator=g)[:num_context + num_gen].int()
    past_tokens = torch.randint(0, 1000, (num_slots, k), generator=g).int()
    past_hidden = torch.randn(num_slots, k, h, generator=g).to(dtype)
    return input_ids, seq_lens, hidden, num_acc, past_tokens, past_hidden, slots


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_context=st.integers(0, 3), num_gen=st.integers(0, 5),
       k=st.integers(1, 5), h=st.integers(1, 24), dtype=st.sampled_from(DTYPES))
def test_cpu_matches_reference(seed, num_context, num_gen, k, h, dtype):
    ids, seq_lens, hidden, num_acc, pt, ph, slots = make_case(seed, num_context, num_gen, k, h,
                                                              dtype)
    want_t, want_h = ref_update_ring(ids, seq_lens, hidden, num_acc, pt, ph, slots, num_context)
    update_hidden_ring(ids, seq_lens, hidden, num_acc, pt, ph, slots, num_context)
    assert torch.equal(pt, want_t)
    assert torch.equal(ph, want_h)


def test_full_and_empty_shift():
    k, h = 3, 2
    pt = torch.tensor([[1, 2, 3]], dtype=torch.int32)
    ph = torch.arange(6, dtype=torch.float32).reshape(1, 3, 2)
    ids = torch.tensor([10, 11, 12, 13], dtype=torch.int32)
    hid = torch.arange(100, 108, dtype=torch.float32).reshape(4, 2)
    one = torch.tensor([0], dtype=torch.int32)
    update_hidden_ring(ids, torch.tensor([4]), hid, torch.tensor([1]), pt, ph, one, 0)
    assert pt.tolist() == [[2, 3, 10]]  # shift by one: an overlapping move
    assert ph[0].tolist() == [[2, 3], [4, 5], [100, 101]]
    update_hidden_ring(ids, torch.tensor([4]), hid, torch.tensor([4]), pt, ph, one, 0)
    assert pt.tolist() == [[11, 12, 13]]  # K+1 accepted: the newest K of the inputs
    update_hidden_ring(ids[:2], torch.tensor([2]), hid[:2], torch.tensor([1]), pt, ph, one, 1)
    assert pt.tolist() == [[13, 10, 11]]  # a prompt shorter than K keeps the older tail


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("h", (7168, 4, 33, 1))
def test_cuda_matches_cpu(dtype, h):
    for seed in range(4):
        case = make_case(seed, 5, 200, 3, h, dtype, num_slots=512, max_prompt=40)
        cpu = [t.clone() for t in case]
        gpu_case = [t.cuda() for t in case]
        update_hidden_ring(*cpu, 5)
        update_hidden_ring(*gpu_case, 5)
        assert torch.equal(gpu_case[4].cpu(), cpu[4]) and torch.equal(gpu_case[5].cpu(), cpu[5])
