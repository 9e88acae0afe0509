"""Greedy MTP sample-and-accept (DESIGN 3.6): argmax every logits row, then accept the longest
prefix of drafts that equals the targets, plus the bonus (golden) token."""

from __future__ import annotations

import functools

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import argmax_f32, as_i32, check, check_float, np_f32, np_i32, same_device

FILL = -1  # accepted[r, j] for j >= num_accepted[r]
MAX_ROWS = 64  # K + 1 rows of one request must fit the kernel's shared-memory table


def _layout(logits: torch.Tensor, draft_tokens: torch.Tensor, num_context: int, k: int) -> int:
    check(logits.dim() == 2, f"logits: expected [rows, vocab], got shape {tuple(logits.shape)}")
    check_float("logits", logits)
    check(k >= 0, f"max_draft_len: {k} < 0")
    check(k + 1 <= MAX_ROWS, f"max_draft_len: {k} > {MAX_ROWS - 1}")
    rows, vocab = logits.shape
    check(vocab >= 1, "logits: empty vocabulary")
    check(0 <= num_context <= rows, f"num_context: {num_context} not in [0, {rows}]")
    gen_rows = rows - num_context
    check(gen_rows % (k + 1) == 0,
          f"logits: {gen_rows} generation rows is not a multiple of max_draft_len+1 = {k + 1}")
    num_gen = gen_rows // (k + 1)
    check(draft_tokens.numel() == num_gen * k,
          f"draft_tokens: {draft_tokens.numel()} entries, expected num_gen*K = {num_gen * k}")
    return num_gen


def mtp_sample_and_accept(logits: torch.Tensor, draft_tokens: torch.Tensor, num_context: int,
                          max_draft_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy target sampling and draft acceptance for one MTP step.

    Args:
      logits: [num_context + num_gen*(K+1), V] float32/float16/bfloat16; rows of context
        requests first (one each), then K+1 rows per generation request. The last dimension
        must be contiguous; rows may be strided.
      draft_tokens: [num_gen*K] int32 (int64 accepted), the drafts of each generation request.
      num_context: number of context requests.
      max_draft_len: K.

    Returns:
      accepted [num_context+num_gen, K+1] int32 and num_accepted [num_context+num_gen] int32.
      target[r] = argmax of row r (the first NaN if the row has one, else the lowest index of
      the maximum: torch.argmax's answer). Context request: accepted[0] = its target, num = 1.
      Generation request g with rows from num_context + g*(K+1): n = longest prefix with
      draft[g*K+j] == target[row+j]; accepted[0..n] = target[row..row+n]; num = n + 1.
      Entries of accepted past num are -1.
    """
    num_context, k = int(num_context), int(max_draft_len)
    num_gen = _layout(logits, draft_tokens, num_context, k)
    same_device(("logits", logits), ("draft_tokens", draft_tokens))
    if logits.is_cuda:
        return _cuda(logits, as_i32(draft_tokens.reshape(-1)), num_context, num_gen, k)
    acc, num = _cpu(np_f32(logits), np_i32(draft_tokens.reshape(-1)), num_context, num_gen, k)
    return torch.from_numpy(acc), torch.from_numpy(num)


@njit(cache=True, nogil=True)
def _cpu(logits, draft, num_context, num_gen, k):
    r_total = num_context + num_gen
    accepted = np.full((r_total, k + 1), -1, np.int32)
    num = np.empty(r_total, np.int32)
    for q in range(num_context):
        accepted[q, 0] = argmax_f32(logits[q])
        num[q] = 1
    target = np.empty(k + 1, np.int32)
    for g in range(num_gen):
        row = num_context + g * (k + 1)
        for j in range(k + 1):
            target[j] = argmax_f32(logits[row + j])
        n = 0
        while n < k and draft[g * k + n] == target[n]:
            n += 1
        for j in range(n + 1):
            accepted[num_context + g, j] = target[j]
        num[num_context + g] = n + 1
    return accepted, num


def cluster_size(num_requests: int, device: torch.device, arch: int) -> int:
    """Blocks per request: a cluster of up to 8 when the requests alone don't cover the SMs."""
    if arch < 90:
        return 1
    sms = cl.num_sms(cl.device_index(device))
    cs = 1
    while cs < 8 and num_requests * cs < sms:
        cs *= 2
    return cs


@functools.lru_cache(maxsize=None)
def _kernel(dtype: torch.dtype, cs: int, index: int, defines: tuple[str, ...]):
    device = torch.device("cuda", index)
    ty = cl.CUDA_TYPE[dtype]
    group = tuple(f"sample_accept_c{c}<{ty}>"
                  for c in ((1, 2, 4, 8) if cl.arch_of(device) >= 90 else (1,)))
    return cl.get_kernel("sample_accept.cu", f"sample_accept_c{cs}<{ty}>", device, group, defines)


def _cuda(logits, draft, num_context, num_gen, k, cluster=None, block=512, defines=()):
    """Launch the fused kernel; ``cluster``/``block``/``defines`` override the tuning (tests and
    benchmarks; ``block`` must match SA_BLOCK in ``defines``)."""
    check(logits.stride(1) == 1, "logits: the vocabulary dimension must be contiguous")
    device = logits.device
    r_total = num_context + num_gen
    out = torch.empty(r_total * (k + 2), dtype=torch.int32, device=device)  # one allocation
    accepted, num = out[:r_total * (k + 1)].view(r_total, k + 1), out[r_total * (k + 1):]
    if r_total == 0:
        return accepted, num
    index = cl.device_index(device)
    cs = cluster or cluster_size(r_total, device, cl.arch_of(device))
    kernel = _kernel(logits.dtype, cs, index, tuple(defines))
    args = (cl.ptr(logits), np.int64(logits.stride(0)), np.int32(logits.shape[1]), cl.ptr(draft),
            np.int32(num_context), np.int32(k), cl.ptr(accepted), cl.ptr(num))
    cl.launch(kernel, (r_total * cs,), (block,), args, device)
    return accepted, num
