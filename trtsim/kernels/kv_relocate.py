"""KV relocation for tree speculation: move the KV rows of the accepted tree path to linear
positions after the verified prefix."""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import as_i32, as_i64, check, check_int, same_device


def relocate_kv(kv_cache: torch.Tensor, accept_index: torch.Tensor,
                accept_token_num: torch.Tensor, past_lens: torch.Tensor, num_draft_tokens: int,
                slot_ids: torch.Tensor | None = None) -> None:
    """Move the accepted path's KV rows to consecutive positions (in place).

    Args:
      kv_cache: [..., num_slots, max_seq, D] contiguous, any dtype; leading dims (layers, K/V,
        ...) are planes moved alike.
      accept_index: [bs, S] int32/int64 from verify_tree_greedy (global node indices b*N + i,
        root first); accept_token_num: [bs] accepted drafts.
      past_lens: [bs] int: position of each request's tree root (node i was written at
        past_lens[b] + i).
      num_draft_tokens: N, nodes per tree (root included).
      slot_ids: [bs] slot of each request in kv_cache (default: request b uses slot b);
        distinct.

    For j = 1..accept_token_num[b] in order, row past_lens[b] + j <- row past_lens[b] +
    (accept_index[b, j] - b*N). Trees whose node indices increase along every path (parents
    first, as build_dynamic_tree and SGLang make them) are relocated exactly; positions outside
    [0, max_seq) are skipped.
    """
    check(kv_cache.dim() >= 3 and kv_cache.is_contiguous(),
          f"kv_cache: expected contiguous [..., slots, max_seq, D], got {tuple(kv_cache.shape)}")
    check_int("accept_index", accept_index)
    check(accept_index.dim() == 2, "accept_index: expected [bs, S]")
    bs, s = accept_index.shape
    check(accept_token_num.numel() == bs and past_lens.numel() == bs,
          f"accept_token_num/past_lens: expected {bs} entries")
    check(slot_ids is None or slot_ids.numel() == bs, f"slot_ids: expected {bs} entries")
    n = int(num_draft_tokens)
    num_slots, max_seq = kv_cache.shape[-3], kv_cache.shape[-2]
    check(slot_ids is not None or bs <= num_slots, f"kv_cache: {num_slots} slots for {bs} requests")
    device = same_device(("kv_cache", kv_cache), ("accept_index", accept_index),
                         ("accept_token_num", accept_token_num), ("past_lens", past_lens),
                         ("slot_ids", slot_ids))
    if bs == 0 or kv_cache.numel() == 0:
        return
    planes = math.prod(kv_cache.shape[:-3])
    check(planes <= 65535 and bs <= 65535, f"kv_cache: {planes} planes / {bs} requests > 65535")
    slots = as_i32(slot_ids) if slot_ids is not None else None
    if device.type == "cuda":
        _cuda(kv_cache, as_i32(accept_index), as_i32(accept_token_num), as_i64(past_lens), slots,
              n, planes)
        return
    rows = kv_cache.view(torch.uint8).numpy().reshape(planes, num_slots, max_seq, -1)
    slot_np = slots.numpy() if slots is not None else np.arange(bs, dtype=np.int32)
    _cpu(rows, as_i32(accept_index).numpy(), as_i32(accept_token_num).numpy(),
         as_i64(past_lens).numpy(), slot_np, n)


@njit(cache=True, nogil=True)
def _cpu(rows, accept_index, accept_num, past_lens, slot_ids, n_nodes):
    planes, _, max_seq, _ = rows.shape
    bs, s = accept_index.shape
    for b in range(bs):
        p0 = past_lens[b]
        for j in range(1, min(accept_num[b] + 1, s)):
            src = p0 + accept_index[b, j] - b * n_nodes
            dst = p0 + j
            if src < 0 or src >= max_seq or dst < 0 or dst >= max_seq or src == dst:
                continue
            for p in range(planes):
                rows[p, slot_ids[b], dst, :] = rows[p, slot_ids[b], src, :]


def _cuda(kv, accept_index, accept_num, past_lens, slot_ids, n, planes):
    device = kv.device
    num_slots, max_seq = kv.shape[-3], kv.shape[-2]
    row_bytes = kv.shape[-1] * kv.element_size()
    w = cl.copy_word(row_bytes, kv)
    row_words = row_bytes // w
    kernel = cl.get_kernel("kv_relocate.cu", f"relocate_kv<{cl.WORD_TYPES[w]}>", device)
    block = 128
    grid = (max(1, (row_words + block - 1) // block), accept_index.shape[0], planes)
    args = (cl.ptr(kv), np.int64(num_slots), np.int64(max_seq), np.int64(row_words),
            cl.ptr(accept_index), np.int32(accept_index.shape[1]), cl.ptr(accept_num),
            cl.ptr(past_lens), cl.ptr(slot_ids), np.int32(n))
    cl.launch(kernel, grid, (block,), args, device)
