"""mtp_sample_and_accept: the numba twin against the plain reference, and CUDA against the twin."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tests.kernel_reference import (FLOAT_DTYPES, gpu, kernel_settings, ref_argmax,
                                    ref_sample_accept, rows_of)

from trtsim.kernels import mtp_sample_and_accept

DTYPES = FLOAT_DTYPES
SETTINGS = kernel_settings(60)


def make_case(seed, num_context, num_gen, k, vocab, dtype, ties, special, accept_rate):
    """Logits with frequent ties (small integers) or none, optional NaN/inf entries, and drafts
    that match the targets with probability accept_rate (empty to full acceptance)."""
    g = torch.Generator().manual_seed(seed)
    rows = num_context + num_gen * (k + 1)
    if ties:
        logits = torch.randint(-2, 3, (rows, vocab), generator=g).float()
    else:
        logits = torch.randn(rows, vocab, generator=g) * 4
    if special and rows:
        for _ in range(special):
            r = int(torch.randint(rows, (1,), generator=g))
            c = int(torch.randint(vocab, (1,), generator=g))
            kind = int(torch.randint(4, (1,), generator=g))
            if kind == 0:
                logits[r, c] = float("nan")
            elif kind == 1:
                logits[r, c] = float("inf")
            elif kind == 2:
                logits[r, :] = float("-inf")
            else:
                logits[r, c] = float("-inf")
    logits = logits.to(dtype)
    targets = [ref_argmax(r) for r in rows_of(logits)]
    drafts = []
    for gi in range(num_gen):
        for j in range(k):
            t = targets[num_context + gi * (k + 1) + j]
            if float(torch.rand(1, generator=g)) < accept_rate:
                drafts.append(t)
            else:
                drafts.append((t + 1 + int(torch.randint(vocab, (1,), generator=g))) % vocab
                              if vocab > 1 else t + 1)
    return logits, torch.tensor(drafts, dtype=torch.int32)


@SETTINGS
@given(data=st.data())
def test_cpu_matches_reference(data):
    k = data.draw(st.integers(0, 5))
    num_context = data.draw(st.integers(0, 4))
    num_gen = data.draw(st.integers(0, 5))
    logits, drafts = make_case(
        data.draw(st.integers(0, 2**31 - 1)), num_context, num_gen, k,
        data.draw(st.integers(1, 70)), data.draw(st.sampled_from(DTYPES)),
        data.draw(st.booleans()), data.draw(st.integers(0, 3)),
        data.draw(st.sampled_from((0.0, 0.5, 0.9, 1.0))))
    accepted, num = mtp_sample_and_accept(logits, drafts, num_context, k)
    ref_acc, ref_num = ref_sample_accept(logits, drafts, num_context, k)
    assert accepted.dtype == torch.int32 and num.dtype == torch.int32
    assert accepted.shape == (num_context + num_gen, k + 1)
    assert accepted.tolist() == ref_acc
    assert num.tolist() == ref_num


def test_targets_agree_with_torch_argmax():
    logits, drafts = make_case(3, 2, 3, 3, 1000, torch.bfloat16, True, 0, 1.0)
    accepted, num = mtp_sample_and_accept(logits, drafts, 2, 3)
    targets = torch.argmax(logits.float(), dim=-1)
    assert accepted[:2, 0].tolist() == targets[:2].tolist()
    assert accepted[2:].tolist() == targets[2:].reshape(3, 4).tolist()  # all drafts match
    assert num.tolist() == [1, 1, 4, 4, 4]


def test_strided_rows_and_int64_drafts():
    base = torch.randn(7, 33)
    logits = base[:, 1:]  # rows strided, not contiguous
    drafts = torch.argmax(logits, -1)[1:].reshape(2, 3)[:, :2].reshape(-1).to(torch.int64)
    accepted, num = mtp_sample_and_accept(logits, drafts, 1, 2)
    assert num.tolist() == [1, 3, 3]


def test_bad_layout_names_the_argument():
    with pytest.raises(ValueError, match="max_draft_len"):
        mtp_sample_and_accept(torch.zeros(5, 4), torch.zeros(3, dtype=torch.int32), 1, 2)
    with pytest.raises(ValueError, match="draft_tokens"):
        mtp_sample_and_accept(torch.zeros(4, 4), torch.zeros(3, dtype=torch.int32), 1, 2)


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,k,vocab", [(1, 3, 129_280), (32, 3, 129_280), (256, 3, 129_280),
                                           (3, 0, 1000), (64, 5, 4097), (300, 1, 37)])
def test_cuda_matches_cpu(dtype, batch, k, vocab):
    for seed, (num_context, ties, offset) in enumerate([(0, True, 0), (min(2, batch), False, 1),
                                                        (batch // 3, True, 3)]):
        num_gen = batch - num_context
        logits, drafts = make_case(seed, num_context, num_gen, k, vocab + offset, dtype, ties,
                                   3, 0.8)
        logits = logits[:, offset:]  # offset rows start off the 16-byte boundary
        drafts = drafts.clamp(max=vocab - 1)
        want = mtp_sample_and_accept(logits, drafts, num_context, k)
        got = mtp_sample_and_accept(logits.cuda(), drafts.cuda(), num_context, k)
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
