"""MTP hidden-state ring update (DESIGN 3.6): per slot, the last K tokens and hidden rows."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import as_i32, check, np_i32, same_device


def update_hidden_ring(input_ids: torch.Tensor, seq_lens: torch.Tensor,
                       hidden_states: torch.Tensor, num_accepted: torch.Tensor,
                       past_tokens: torch.Tensor, past_hidden: torch.Tensor,
                       slot_ids: torch.Tensor, num_context: int) -> None:
    """Append each request's new tokens to its slot's ring, keeping the newest K (in place).

    Args:
      input_ids: [T] int32/int64, the step's input tokens, requests back to back (context
        prompts first, then K+1 tokens per generation request).
      seq_lens: [R] int32/int64, tokens of each request in ``input_ids``.
      hidden_states: [T, H], the target model's hidden rows of those tokens (any dtype).
      num_accepted: [R] int32/int64 (read for generation requests only).
      past_tokens: [num_slots, K] int32, contiguous: the token ring, updated in place.
      past_hidden: [num_slots, K, H] with hidden_states' dtype, contiguous: updated in place.
      slot_ids: [R] int32/int64, distinct.
      num_context: number of context requests (first in the batch).

    Request q appends a rows: its whole prompt (context, a = seq_lens[q]) or the first
    a = num_accepted[q] input rows (generation); ring <- last K of (ring ++ appended). The left
    shift overlaps its source (a memmove) and is done exactly on both devices.
    """
    num_context = int(num_context)
    r_total = seq_lens.numel()
    check(past_tokens.dim() == 2 and past_tokens.dtype == torch.int32
          and past_tokens.is_contiguous(), "past_tokens: expected contiguous int32 [slots, K]")
    k = past_tokens.shape[1]
    check(past_hidden.dim() == 3 and tuple(past_hidden.shape[:2]) == tuple(past_tokens.shape)
          and past_hidden.is_contiguous(),
          f"past_hidden: expected contiguous [slots, K, H] matching past_tokens "
          f"{tuple(past_tokens.shape)}, got {tuple(past_hidden.shape)}")
    h = past_hidden.shape[2]
    check(hidden_states.dim() == 2 and hidden_states.shape[1] == h
          and hidden_states.dtype == past_hidden.dtype,
          f"hidden_states: expected [T, {h}] {past_hidden.dtype}, got "
          f"{tuple(hidden_states.shape)} {hidden_states.dtype}")
    check(hidden_states.shape[0] == input_ids.numel(),
          f"hidden_states: {hidden_states.shape[0]} rows for {input_ids.numel()} input tokens")
    check(num_accepted.numel() == r_total and slot_ids.numel() == r_total,
          f"num_accepted/slot_ids: expected {r_total} entries")
    check(0 <= num_context <= r_total, f"num_context: {num_context} not in [0, {r_total}]")
    device = same_device(("input_ids", input_ids), ("seq_lens", seq_lens),
                         ("hidden_states", hidden_states), ("num_accepted", num_accepted),
                         ("past_tokens", past_tokens), ("past_hidden", past_hidden),
                         ("slot_ids", slot_ids))
    if r_total == 0 or k == 0:
        return
    if device.type == "cuda":
        _cuda(as_i32(input_ids.reshape(-1)), as_i32(seq_lens), hidden_states.contiguous(),
              as_i32(num_accepted), past_tokens, past_hidden, as_i32(slot_ids), num_context)
        return
    hid = hidden_states.contiguous()
    _cpu(np_i32(input_ids.reshape(-1)), np_i32(seq_lens), _bytes_rows(hid),
         np_i32(num_accepted), past_tokens.numpy(), _bytes_rows(past_hidden.view(-1, h)),
         np_i32(slot_ids), num_context, k)


def _bytes_rows(t: torch.Tensor) -> np.ndarray:
    """A [rows, bytes] uint8 numpy view of a contiguous 2-D tensor (any dtype, bf16 too)."""
    return t.view(torch.uint8).numpy().reshape(t.shape[0], -1)


@njit(cache=True, nogil=True)
def _cpu(input_ids, seq_lens, hidden, num_accepted, past_tokens, past_rows, slot_ids,
         num_context, k):
    off = 0
    for q in range(seq_lens.shape[0]):
        a = seq_lens[q] if q < num_context else num_accepted[q]
        m = min(a, k)
        base = slot_ids[q] * k
        for i in range(k):  # increasing i: row i + m is read before it is overwritten
            if i < k - m:
                past_tokens[slot_ids[q], i] = past_tokens[slot_ids[q], i + m]
                past_rows[base + i, :] = past_rows[base + i + m, :]
            else:
                past_tokens[slot_ids[q], i] = input_ids[off + a - k + i]
                past_rows[base + i, :] = hidden[off + a - k + i, :]
        off += seq_lens[q]


def _cuda(input_ids, seq_lens, hidden, num_accepted, past_tokens, past_hidden, slot_ids,
          num_context):
    device = hidden.device
    k, h = past_hidden.shape[1], past_hidden.shape[2]
    row_bytes = h * past_hidden.element_size()
    w = cl.copy_word(row_bytes, hidden, past_hidden)
    row_words = row_bytes // w
    kernel = cl.get_kernel("hidden_ring.cu", f"update_hidden_ring<{cl.WORD_TYPES[w]}>", device)
    block = 128
    grid = (max(1, (row_words + block - 1) // block), seq_lens.numel())
    args = (cl.ptr(input_ids), cl.ptr(seq_lens), cl.ptr(hidden), cl.ptr(num_accepted),
            cl.ptr(past_tokens), cl.ptr(past_hidden), cl.ptr(slot_ids), np.int32(num_context),
            np.int32(k), np.int64(row_words))
    cl.launch(kernel, grid, (block,), args, device)
