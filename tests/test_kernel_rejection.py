"""rejection_sample: the numba twin against the reference, the emitted distribution against q
(Monte Carlo), and CUDA against the twin."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests.kernel_reference import FLOAT_DTYPES, gpu, kernel_settings, ref_rejection
from trtsim.kernels import rejection_sample

DTYPES = FLOAT_DTYPES
SETTINGS = kernel_settings(60)


def probs(g, rows, vocab, dtype, peaked):
    x = torch.rand(rows, vocab, generator=g)
    if peaked:  # sparse, with exact zeros and ties
        x = torch.floor(x * 3) * (torch.rand(rows, vocab, generator=g) < 0.5)
        x[:, 0] += 0.5
    return (x / x.sum(-1, keepdim=True)).to(dtype)


def make_case(seed, bs, max_k, vocab, dtype, with_p, peaked):
    g = torch.Generator().manual_seed(seed)
    num = torch.randint(0, max_k + 1, (bs,), generator=g).int()
    t = int(num.sum())
    q = probs(g, t, vocab, dtype, peaked)
    p = probs(g, t, vocab, dtype, peaked) if with_p else None
    if p is not None and t:  # drafts sampled from p, sometimes a zero-probability token
        drafts = torch.multinomial(p.float(), 1, generator=g).reshape(-1).int()
    else:
        drafts = torch.randint(0, vocab, (t,), generator=g).int()
    bonus = torch.randint(0, vocab, (bs,), generator=g).int()
    u = torch.rand(t, generator=g, dtype=torch.float64)
    e = torch.empty(bs, vocab).exponential_(generator=g)
    return drafts, num, p, q, bonus, u, e


@SETTINGS
@given(seed=st.integers(0, 2**31 - 1), bs=st.integers(0, 5), max_k=st.integers(0, 4),
       vocab=st.integers(1, 12), dtype=st.sampled_from(DTYPES), with_p=st.booleans(),
       peaked=st.booleans(), greedy=st.booleans())
def test_cpu_matches_reference(seed, bs, max_k, vocab, dtype, with_p, peaked, greedy):
    drafts, num, p, q, bonus, u, e = make_case(seed, bs, max_k, vocab, dtype, with_p, peaked)
    if greedy:
        p = None
    out = rejection_sample(drafts, num, p, q, bonus, u, e, greedy=greedy)
    width = (int(num.max()) if bs else 0) + 1
    assert out.dtype == torch.int32 and out.shape == (bs, width)
    assert out.tolist() == ref_rejection(drafts, num, p, q, bonus, u, e, width, greedy)


def test_one_hot_target_is_greedy():
    # with a one-hot target and one-hot drafts the random path equals the greedy path
    drafts, num, _, q, bonus, u, e = make_case(5, 50, 4, 9, torch.float32, False, False)
    one_hot = torch.nn.functional.one_hot(q.argmax(-1), 9).float()
    drafts = torch.where(torch.rand(drafts.shape) < 0.7, q.argmax(-1).int(), drafts)
    u = u.clamp(min=1e-9)
    a = rejection_sample(drafts, num, None, one_hot, bonus, u, e)
    b = rejection_sample(drafts, num, None, one_hot, bonus, None, None, greedy=True)
    assert torch.equal(a, b)


def chi_square(counts, probs_):
    n = counts.sum()
    expected = n * probs_
    return float(((counts - expected) ** 2 / expected).sum())


@pytest.mark.parametrize("with_p", (True, False))
def test_emitted_tokens_follow_target(with_p):
    """The first emitted token of a one-draft chain is distributed as q (chi-square, fixed
    seed; 200,000 samples; the bound is the 0.999 quantile of chi2 with 5 degrees of freedom)."""
    g = torch.Generator().manual_seed(1234)
    vocab, samples = 6, 200_000
    q = torch.tensor([0.30, 0.05, 0.25, 0.10, 0.20, 0.10])
    p = torch.tensor([0.10, 0.40, 0.10, 0.30, 0.05, 0.05])
    if with_p:
        drafts = torch.multinomial(p, samples, replacement=True, generator=g).int()
        draft_probs = p.expand(samples, vocab).contiguous()
    else:
        drafts = torch.randint(0, vocab, (samples,), generator=g).int()
        draft_probs = None
    out = rejection_sample(drafts, torch.ones(samples, dtype=torch.int32), draft_probs,
                           q.expand(samples, vocab).contiguous(),
                           torch.zeros(samples, dtype=torch.int32),
                           torch.rand(samples, generator=g, dtype=torch.float64),
                           torch.empty(samples, vocab).exponential_(generator=g))
    first = out[:, 0].long()
    counts = torch.bincount(first, minlength=vocab).double()
    assert chi_square(counts, q.double()) < 20.52
    assert 0.5 * float((counts / samples - q.double()).abs().sum()) < 0.01  # total variation
    # accepted chains carry the bonus (token 0) next, rejected ones stop
    accepted = first == drafts.long()
    assert bool((out[:, 1][accepted & (out[:, 1] != -1)] == 0).all())


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bs,k,vocab", [(1, 3, 129_280), (32, 5, 32_000), (256, 3, 1000),
                                        (17, 1, 7)])
def test_cuda_matches_cpu(dtype, bs, k, vocab):
    for seed, (with_p, peaked, greedy) in enumerate([(True, False, False), (False, True, False),
                                                     (True, True, False), (False, False, True)]):
        drafts, num, p, q, bonus, u, e = make_case(seed, bs, k, vocab, dtype, with_p, peaked)
        want = rejection_sample(drafts, num, p, q, bonus, u, e, greedy=greedy)
        got = rejection_sample(drafts.cuda(), num.cuda(), None if p is None else p.cuda(),
                               q.cuda(), bonus.cuda(), u.cuda(), e.cuda(), greedy=greedy,
                               max_spec_len=int(num.max()))
        assert torch.equal(got.cpu(), want)
