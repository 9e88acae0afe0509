"""prepare_drafter_inputs: context and generation layouts against the reference; CUDA vs CPU."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import (FLOAT_DTYPES, gpu, kernel_settings, ragged_batch,
                                    ref_drafter_inputs)
from trtsim.kernels import prepare_drafter_inputs

DTYPES = FLOAT_DTYPES
SETTINGS = kernel_settings(50)


def make_case(seed, num_context, num_gen, k, h, dtype, num_slots=16, max_prompt=9):
    g = torch.Generator().manual_seed(seed)
    input_ids, seq_lens, hidden = ragged_batch(g, num_context, num_gen, k, h, dtype, max_prompt)
    r = num_context + num_gen
    num_acc = torch.cat([torch.ones(num_context), torch.randint(1, k + 2, (num_gen,),
                                                                generator=g)]).int()
    accepted = torch.randint(0, 1000, (r, k + 1), generator=g).int()
    slots = torch.randperm(num_slots, generator=g)[:r].int()
    past_tokens = torch.randint(0, 1000, (num_slots, k), generator=g).int()
    past_hidden = torch.randn(num_slots, k, h, generator=g).to(dtype)
    return input_ids, seq_lens, hidden, accepted, num_acc, past_tokens, past_hidden, slots


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), num_context=st.integers(0, 3), num_gen=st.integers(0, 5),
       k=st.integers(1, 5), h=st.integers(1, 24), dtype=st.sampled_from(DTYPES))
def test_cpu_matches_reference(seed, num_context, num_gen, k, h, dtype):
    case = make_case(seed, num_context, num_gen, k, h, dtype)
    ids, hidden = prepare_drafter_inputs(*case, num_context)
    want_ids, want_hidden = ref_drafter_inputs(*case, num_context)
    assert ids.dtype == torch.int32 and hidden.dtype == dtype
    assert ids.tolist() == want_ids.tolist()
    assert torch.equal(hidden, want_hidden)


def test_layout_example():
    # prompt A B C D -> B C D E (E = accepted[0]); generation ring [F G X] -> [G X | Y]
    ids = torch.tensor([1, 2, 3, 4, 50, 51, 52, 53], dtype=torch.int32)
    hidden = torch.arange(8, dtype=torch.float32).reshape(8, 1)
    accepted = torch.tensor([[5, -1, -1, -1], [60, 61, -1, -1]], dtype=torch.int32)
    pt = torch.tensor([[7, 8, 9]], dtype=torch.int32)
    ph = torch.tensor([[[0.5], [1.5], [2.5]]])
    out_ids, out_h = prepare_drafter_inputs(ids, torch.tensor([4, 4]), hidden, accepted,
                                            torch.tensor([1, 2]), pt, ph, torch.tensor([0, 0]), 1)
    assert out_ids.tolist() == [2, 3, 4, 5, 8, 9, 61]
    assert out_h.reshape(-1).tolist() == [0, 1, 2, 3, 0.5, 1.5, 2.5]


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("h", (7168, 4, 33, 1))
def test_cuda_matches_cpu(dtype, h):
    for seed, (num_context, num_gen) in enumerate([(0, 256), (4, 0), (3, 61)]):
        case = make_case(seed, num_context, num_gen, 3, h, dtype, num_slots=512, max_prompt=300)
        want = prepare_drafter_inputs(*case, num_context)
        got = prepare_drafter_inputs(*(t.cuda() for t in case), num_context)
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
