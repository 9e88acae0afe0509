"""Greedy tree verification with SGLang's ``verify_tree_greedy`` semantics (DESIGN 3.7)."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import check, check_int, np_i64, same_device


def verify_tree_greedy(candidates: torch.Tensor, retrive_index: torch.Tensor,
                       retrive_next_token: torch.Tensor, retrive_next_sibling: torch.Tensor,
                       target_predict: torch.Tensor, num_speculative_tokens: int
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Walk each request's draft tree greedily against the target's argmax.

    Args (all [bs, N], int32 or int64; N nodes per request, node 0 the root = the last
    verified token):
      candidates: the draft token of each node.
      retrive_index: global index of each node, b*N + i.
      retrive_next_token: first child (local index) or -1.
      retrive_next_sibling: next sibling (local index) or -1.
      target_predict: the target's argmax at each node (read by global index).
      num_speculative_tokens: S >= 1, the longest path kept (root included).

    Returns:
      predicts [bs*N] int32: -1 except along the accepted path, where predicts[node] =
        target[node] (the next token: an accepted draft, or the bonus at the last node).
      accept_index [bs, S] int32: global indices of the path, root first, -1 padded.
      accept_token_num [bs] int32: accepted drafts (bonus excluded).
    From the root, each depth tries the current node's children in sibling order and accepts the
    first whose candidate equals target[current]; stops when none matches or after S-1 steps.
    """
    s = int(num_speculative_tokens)
    named = (("candidates", candidates), ("retrive_index", retrive_index),
             ("retrive_next_token", retrive_next_token),
             ("retrive_next_sibling", retrive_next_sibling), ("target_predict", target_predict))
    for name, t in named:
        check_int(name, t)
        check(t.dim() == 2 and t.shape == candidates.shape,
              f"{name}: expected shape {tuple(candidates.shape)}, got {tuple(t.shape)}")
    check(s >= 1, f"num_speculative_tokens: {s} < 1")
    device = same_device(*named)
    bs, n = candidates.shape
    check(n >= 1, "candidates: trees need at least the root")
    if device.type == "cuda":
        return _cuda([t for _, t in named], bs, n, s)
    predicts, accept_index, accept_num = _cpu(*(np_i64(t) for _, t in named), s)
    return (torch.from_numpy(predicts), torch.from_numpy(accept_index),
            torch.from_numpy(accept_num))


@njit(cache=True, nogil=True)
def _cpu(candidates, retrive_index, next_token, next_sibling, target, s):
    bs, n = candidates.shape
    flat_target = target.reshape(-1)
    predicts = np.full(bs * n, -1, np.int32)
    accept_index = np.full((bs, s), -1, np.int32)
    accept_num = np.zeros(bs, np.int32)
    for b in range(bs):
        last = retrive_index[b, 0]
        accept_index[b, 0] = last
        acc = 0
        cur = 0
        for _ in range(1, s):
            cur = next_token[b, cur]
            matched = False
            tries = 0
            while tries < n and 0 <= cur < n:
                tries += 1
                tgt = flat_target[last]
                if candidates[b, cur] == tgt:
                    predicts[last] = tgt
                    acc += 1
                    last = retrive_index[b, cur]
                    accept_index[b, acc] = last
                    matched = True
                    break
                cur = next_sibling[b, cur]
            if not matched:
                break
        accept_num[b] = acc
        predicts[last] = flat_target[last]
    return predicts, accept_index, accept_num


def _cuda(tensors, bs, n, s):
    device = tensors[0].device
    dtype = torch.int64 if any(t.dtype == torch.int64 for t in tensors) else torch.int32
    cand, ridx, nxt, sib, tgt = (t.to(dtype).contiguous() for t in tensors)
    predicts = torch.empty(bs * n, dtype=torch.int32, device=device)
    accept_index = torch.empty((bs, s), dtype=torch.int32, device=device)
    accept_num = torch.empty(bs, dtype=torch.int32, device=device)
    if bs == 0:
        return predicts, accept_index, accept_num
    ity = "int" if dtype == torch.int32 else "long long"
    kernel = cl.get_kernel("tree_verify.cu", f"verify_tree_greedy<{ity}>", device)
    block = min(256, max(32, ((max(n, s) + 31) // 32) * 32))
    args = (cl.ptr(cand), cl.ptr(ridx), cl.ptr(nxt), cl.ptr(sib), cl.ptr(tgt), np.int32(n),
            np.int32(s), cl.ptr(predicts), cl.ptr(accept_index), cl.ptr(accept_num))
    cl.launch(kernel, (bs,), (block,), args, device)
    return predicts, accept_index, accept_num
