"""Relaxed MTP acceptance for the thinking phase (DESIGN 3.6) with per-slot delta state."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import (as_i32, check, check_float, check_int, np_f32, np_i32, np_i64, same_device)


def relaxed_accept(topk_values: torch.Tensor, topk_indices: torch.Tensor,
                   draft_tokens: torch.Tensor, slot_ids: torch.Tensor, delta_pool: torch.Tensor,
                   num_context: int, max_draft_len: int, relaxed_delta: float,
                   begin_thinking_id: int, end_thinking_id: int
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """Relaxed (top-k / delta) acceptance of MTP drafts; updates ``delta_pool`` in place.

    Args:
      topk_values: [num_context + num_gen*(K+1), k] float32/float16/bfloat16, per logits row the
        top-k softmax probabilities in descending order (row layout of mtp_sample_and_accept).
      topk_indices: same shape, int32/int64, the token ids of those probabilities.
      draft_tokens: [num_gen*K] int32/int64.
      slot_ids: [num_context+num_gen] int32/int64, each request's slot in ``delta_pool``
        (distinct within the batch).
      delta_pool: [num_slots] float32, contiguous; the per-slot delta (0 outside thinking).
      relaxed_delta: the delta that begin-thinking switches on.

    Returns accepted [R, K+1] int32 (-1 past num) and num_accepted [R] int32, R = num_context +
    num_gen. Generation request: draft j is accepted if it equals a top-k index whose probability
    is >= p_top1 - delta[slot] (top-1 always qualifies); the first rejection stops; the token
    after the accepted drafts is top-1 of that row. Context request: accepted[0] = top-1, num 1.
    Afterwards each request's accepted tokens are walked in order: begin_thinking_id sets
    delta[slot] = relaxed_delta, end_thinking_id sets it to 0. The context slots' initial state
    (e.g. a prompt that opened a thinking block) is the caller's to set before the call.
    """
    num_context, k = int(num_context), int(max_draft_len)
    check(topk_values.dim() == 2 and topk_values.shape == topk_indices.shape,
          f"topk_values {tuple(topk_values.shape)} / topk_indices {tuple(topk_indices.shape)}: "
          "expected the same [rows, k] shape")
    check_float("topk_values", topk_values)
    check_int("topk_indices", topk_indices)
    check(topk_values.shape[1] >= 1, "topk_values: k must be >= 1")
    check(delta_pool.dtype == torch.float32 and delta_pool.is_contiguous(),
          "delta_pool: expected a contiguous float32 tensor")
    rows = topk_values.shape[0]
    check(k >= 0 and 0 <= num_context <= rows, f"num_context {num_context} / K {k}: out of range")
    check((rows - num_context) % (k + 1) == 0,
          f"topk rows: {rows - num_context} generation rows is not a multiple of K+1 = {k + 1}")
    num_gen = (rows - num_context) // (k + 1)
    check(draft_tokens.numel() == num_gen * k,
          f"draft_tokens: {draft_tokens.numel()} entries, expected {num_gen * k}")
    check(slot_ids.numel() == num_context + num_gen,
          f"slot_ids: {slot_ids.numel()} entries, expected {num_context + num_gen}")
    device = same_device(("topk_values", topk_values), ("topk_indices", topk_indices),
                         ("draft_tokens", draft_tokens), ("slot_ids", slot_ids),
                         ("delta_pool", delta_pool))
    args = (num_context, k, float(relaxed_delta), int(begin_thinking_id), int(end_thinking_id))
    if device.type == "cuda":
        return _cuda(topk_values.contiguous(), topk_indices.contiguous(),
                     as_i32(draft_tokens.reshape(-1)), as_i32(slot_ids.reshape(-1)), delta_pool,
                     *args)
    acc, num = _cpu(np_f32(topk_values), np_i64(topk_indices), np_i32(draft_tokens.reshape(-1)),
                    np_i32(slot_ids.reshape(-1)), delta_pool.numpy(), num_context, num_gen, k,
                    np.float32(relaxed_delta), int(begin_thinking_id), int(end_thinking_id))
    return torch.from_numpy(acc), torch.from_numpy(num)


@njit(cache=True, nogil=True)
def _cpu(values, indices, draft, slot_ids, delta_pool, num_context, num_gen, k, relaxed_delta,
         begin_id, end_id):
    r_total = num_context + num_gen
    topk = values.shape[1]
    accepted = np.full((r_total, k + 1), -1, np.int32)
    num = np.empty(r_total, np.int32)
    for q in range(r_total):
        slot = slot_ids[q]
        n = 0
        if q < num_context:
            accepted[q, 0] = indices[q, 0]
        else:
            g = q - num_context
            row0 = num_context + g * (k + 1)
            delta = delta_pool[slot]
            while n < k:
                row = row0 + n
                thr = values[row, 0] - delta  # float32 arithmetic, as on the GPU
                ok = False
                for j in range(topk):
                    if j > 0 and thr > values[row, j]:
                        break
                    if draft[g * k + n] == indices[row, j]:
                        ok = True
                        break
                if not ok:
                    break
                accepted[q, n] = draft[g * k + n]
                n += 1
            accepted[q, n] = indices[row0 + n, 0]
        num[q] = n + 1
        delta = delta_pool[slot]
        for j in range(n + 1):
            if accepted[q, j] == begin_id:
                delta = relaxed_delta
            if accepted[q, j] == end_id:
                delta = np.float32(0.0)
        delta_pool[slot] = delta
    return accepted, num


def _cuda(values, indices, draft, slot_ids, delta_pool, num_context, k, relaxed_delta, begin_id,
          end_id):
    device = values.device
    r_total = slot_ids.numel()
    accepted = torch.empty((r_total, k + 1), dtype=torch.int32, device=device)
    num = torch.empty(r_total, dtype=torch.int32, device=device)
    if r_total == 0:
        return accepted, num
    ity = "int" if indices.dtype == torch.int32 else "long long"
    expr = f"relaxed_accept<{cl.CUDA_TYPE[values.dtype]}, {ity}>"
    kernel = cl.get_kernel("relaxed_accept.cu", expr, device)
    args = (cl.ptr(values), cl.ptr(indices), np.int32(values.shape[1]), cl.ptr(draft),
            cl.ptr(slot_ids), cl.ptr(delta_pool), np.int32(num_context), np.int32(r_total),
            np.int32(k), np.float32(relaxed_delta), np.int32(begin_id), np.int32(end_id),
            cl.ptr(accepted), cl.ptr(num))
    cl.launch(kernel, ((r_total + 127) // 128,), (128,), args, device)
    return accepted, num
