"""MTP drafter-input preparation (DESIGN 3.6): the token ids and hidden rows the first MTP
layer sees after the target model's step."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import as_i32, check, same_device
from .hidden_ring import _bytes_rows


def prepare_drafter_inputs(input_ids: torch.Tensor, seq_lens: torch.Tensor,
                           hidden_states: torch.Tensor, accepted: torch.Tensor,
                           num_accepted: torch.Tensor, past_tokens: torch.Tensor,
                           past_hidden: torch.Tensor, slot_ids: torch.Tensor,
                           num_context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Drafter inputs, packed request after request.

    Args:
      input_ids: [T] int32/int64, the step's inputs (context prompts, then K+1 per generation
        request); seq_lens: [R] int32/int64, tokens of each request in ``input_ids``.
      hidden_states: [T, H], the target model's hidden rows.
      accepted: [R, K+1] int32/int64 and num_accepted: [R], from the acceptance kernels.
      past_tokens: [num_slots, K] int32 and past_hidden: [num_slots, K, H]: the rings, already
        updated for this step (update_hidden_ring).
      slot_ids: [R]; num_context: context requests first in the batch.

    Returns (ids, hidden): ids [T_ctx + num_gen*K] int32 and hidden [T_ctx + num_gen*K, H] with
    hidden_states' dtype, T_ctx = the context tokens. Context request: ids = prompt[1:] +
    [accepted[q, 0]], hidden = its prompt rows. Generation request: ids = past_tokens[slot][1:] +
    [accepted[q, num-1]], hidden = past_hidden[slot].
    """
    num_context = int(num_context)
    r_total = seq_lens.numel()
    check(past_tokens.dim() == 2 and past_hidden.dim() == 3
          and tuple(past_hidden.shape[:2]) == tuple(past_tokens.shape),
          f"past_tokens {tuple(past_tokens.shape)} / past_hidden {tuple(past_hidden.shape)}: "
          "expected [slots, K] and [slots, K, H]")
    k, h = past_tokens.shape[1], past_hidden.shape[2]
    check(hidden_states.dim() == 2 and hidden_states.shape[1] == h
          and hidden_states.dtype == past_hidden.dtype,
          f"hidden_states: expected [T, {h}] {past_hidden.dtype}")
    check(hidden_states.shape[0] == input_ids.numel(), "hidden_states: one row per input token")
    check(tuple(accepted.shape) == (r_total, k + 1),
          f"accepted: expected shape {(r_total, k + 1)}, got {tuple(accepted.shape)}")
    check(num_accepted.numel() == r_total and slot_ids.numel() == r_total,
          f"num_accepted/slot_ids: expected {r_total} entries")
    check(0 <= num_context <= r_total, f"num_context: {num_context} not in [0, {r_total}]")
    num_gen = r_total - num_context
    t_ctx = input_ids.numel() - num_gen * (k + 1)
    check(t_ctx >= 0, "input_ids: fewer tokens than the generation requests need")
    total = t_ctx + num_gen * k
    device = same_device(("input_ids", input_ids), ("seq_lens", seq_lens),
                         ("hidden_states", hidden_states), ("accepted", accepted),
                         ("num_accepted", num_accepted), ("past_tokens", past_tokens),
                         ("past_hidden", past_hidden), ("slot_ids", slot_ids))
    out_ids = torch.empty(total, dtype=torch.int32, device=device)
    out_hidden = torch.empty((total, h), dtype=hidden_states.dtype, device=device)
    if r_total == 0 or total == 0:
        return out_ids, out_hidden
    args = (as_i32(input_ids.reshape(-1)), as_i32(seq_lens), hidden_states.contiguous(),
            as_i32(accepted), as_i32(num_accepted), as_i32(past_tokens),
            past_hidden.contiguous(), as_i32(slot_ids))
    if device.type == "cuda":
        _cuda(*args, num_context, out_ids, out_hidden)
    else:
        ids, sl, hid, acc, num, pt, ph, slots = args
        _cpu(ids.numpy(), sl.numpy(), _bytes_rows(hid), acc.numpy(), num.numpy(), pt.numpy(),
             _bytes_rows(ph.view(-1, h)), slots.numpy(), num_context, k, out_ids.numpy(),
             _bytes_rows(out_hidden))
    return out_ids, out_hidden


@njit(cache=True, nogil=True)
def _cpu(input_ids, seq_lens, hidden, accepted, num_accepted, past_tokens, past_rows, slot_ids,
         num_context, k, out_ids, out_rows):
    off = 0
    out = 0
    for q in range(seq_lens.shape[0]):
        if q < num_context:
            p = seq_lens[q]
            for i in range(p - 1):
                out_ids[out + i] = input_ids[off + i + 1]
            if p > 0:
                out_ids[out + p - 1] = accepted[q, 0]
            for i in range(p):
                out_rows[out + i, :] = hidden[off + i, :]
            out += p
        else:
            slot = slot_ids[q]
            for i in range(k - 1):
                out_ids[out + i] = past_tokens[slot, i + 1]
            if k > 0:
                out_ids[out + k - 1] = accepted[q, num_accepted[q] - 1]
            for i in range(k):
                out_rows[out + i, :] = past_rows[slot * k + i, :]
            out += k
        off += seq_lens[q]


def _cuda(input_ids, seq_lens, hidden, accepted, num_accepted, past_tokens, past_hidden,
          slot_ids, num_context, out_ids, out_hidden):
    device = hidden.device
    r_total = seq_lens.numel()
    k, h = past_hidden.shape[1], past_hidden.shape[2]
    row_bytes = h * hidden.element_size()
    w = cl.copy_word(row_bytes, hidden, past_hidden, out_hidden)
    row_words = row_bytes // w
    kernel = cl.get_kernel("drafter_inputs.cu", f"prepare_drafter_inputs<{cl.WORD_TYPES[w]}>",
                           device)
    block = 128
    rows_per_req = max(1, out_ids.numel() // r_total)
    groups = min(64, max(1, rows_per_req // 4))  # row groups: long prompts copy in parallel
    grid = (max(1, (row_words + block - 1) // block), r_total, groups)
    args = (cl.ptr(input_ids), cl.ptr(seq_lens), cl.ptr(hidden), cl.ptr(accepted),
            cl.ptr(num_accepted), cl.ptr(past_tokens), cl.ptr(past_hidden), cl.ptr(slot_ids),
            np.int32(num_context), np.int32(k), np.int64(row_words), cl.ptr(out_ids),
            cl.ptr(out_hidden))
    cl.launch(kernel, grid, (block,), args, device)
