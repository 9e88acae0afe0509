"""Eagle dynamic-tree build in SGLang's layout (``build_tree_kernel_efficient`` semantics):
turn the candidates kept after greedy top-k expansion into retrive_index / next_token /
next_sibling links, positions and the tree attention mask."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import as_i64, check, check_int, np_i64, same_device


def build_dynamic_tree(parent_list: torch.Tensor, selected_index: torch.Tensor,
                       verified_seq_len: torch.Tensor, topk: int
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor,
                                  torch.Tensor]:
    """Build each request's draft tree from the selected candidates.

    Args:
      parent_list: [bs, Lp] int (Lp = topk*(depth-1)+1, or 0 for one level): entry 0 is the
        root, entry 1 + topk*(i-1) + slot the flat candidate index of the node expanded as
        ``slot`` at level i (see tree_select.expand_tree_level).
      selected_index: [bs, N-1] int, ascending flat candidate indices kept (node i >= 1 is
        selected_index[i-1]; node 0 is the root, the last verified token).
      verified_seq_len: [bs] int, tokens already verified (the root's position).
      topk: children per expanded node.

    Returns (all int64 except the mask):
      tree_mask [bs, N, N] bool: row i marks node i, its ancestors and the root.
      positions [bs*N]: verified_seq_len[b] + depth of the node.
      retrive_index [bs, N]: b*N + i.
      retrive_next_token [bs, N]: first child (local index) or -1.
      retrive_next_sibling [bs, N]: next sibling or -1; children are in increasing node order.
    The parent of node i is the root when selected_index[i-1] // topk == 0, else the node whose
    candidate is parent_list[selected_index[i-1] // topk]. A node whose parent was not selected
    (possible only with NaN scores) is linked nowhere; its position counts one level.
    """
    for name, t in (("parent_list", parent_list), ("selected_index", selected_index),
                    ("verified_seq_len", verified_seq_len)):
        check_int(name, t)
    check(parent_list.dim() == 2 and selected_index.dim() == 2,
          "parent_list / selected_index: expected [bs, Lp] / [bs, N-1]")
    bs, n = selected_index.shape[0], selected_index.shape[1] + 1
    check(parent_list.shape[0] == bs and verified_seq_len.numel() == bs,
          f"parent_list / verified_seq_len: expected {bs} requests")
    check(int(topk) >= 1, f"topk: {topk} < 1")
    device = same_device(("parent_list", parent_list), ("selected_index", selected_index),
                         ("verified_seq_len", verified_seq_len))
    topk = int(topk)
    if device.type == "cuda":
        return _cuda(as_i64(parent_list), as_i64(selected_index), as_i64(verified_seq_len), topk,
                     n)
    mask, pos, ridx, nxt, sib = _cpu(np_i64(parent_list), np_i64(selected_index),
                                     np_i64(verified_seq_len).reshape(-1), topk, n)
    return (torch.from_numpy(mask).view(torch.bool), torch.from_numpy(pos),
            torch.from_numpy(ridx), torch.from_numpy(nxt), torch.from_numpy(sib))


@njit(cache=True, nogil=True)
def _parent(sel, plist, topk, n, i):
    s = sel[i - 1]
    if s < 0:
        return -1
    p = s // topk
    if p == 0:
        return 0
    if p >= plist.shape[0]:
        return -1
    tok = plist[p]
    for k in range(n - 1):
        if sel[k] == tok:
            return k + 1
    return -1


@njit(cache=True, nogil=True)
def _cpu(parent_list, selected, seq_len, topk, n):
    bs = selected.shape[0]
    mask = np.zeros((bs, n, n), np.uint8)
    pos = np.empty(bs * n, np.int64)
    ridx = np.empty((bs, n), np.int64)
    nxt = np.full((bs, n), -1, np.int64)
    sib = np.full((bs, n), -1, np.int64)
    for b in range(bs):
        sel, plist = selected[b], parent_list[b]
        for i in range(n):
            ridx[b, i] = b * n + i
            mask[b, i, 0] = 1
            mask[b, i, i] = 1
            depth = 0
            cur = i
            while cur != 0 and depth < n:
                depth += 1
                p = _parent(sel, plist, topk, n, cur)
                if p < 0:
                    break
                mask[b, i, p] = 1
                cur = p
            pos[b * n + i] = seq_len[b] + depth
        for i in range(n - 1, 0, -1):
            p = _parent(sel, plist, topk, n, i)
            if p < 0:
                continue
            sib[b, i] = nxt[b, p]
            nxt[b, p] = i
    return mask, pos, ridx, nxt, sib


def _cuda(parent_list, selected, seq_len, topk, n):
    device = selected.device
    bs = selected.shape[0]
    mask = torch.empty((bs, n, n), dtype=torch.bool, device=device)
    pos = torch.empty(bs * n, dtype=torch.int64, device=device)
    ridx, nxt, sib = (torch.empty((bs, n), dtype=torch.int64, device=device) for _ in range(3))
    if bs == 0:
        return mask, pos, ridx, nxt, sib
    kernel = cl.get_kernel("tree_build.cu", "build_dynamic_tree", device)
    block = min(1024, max(32, ((n + 31) // 32) * 32))
    args = (cl.ptr(parent_list), np.int32(parent_list.shape[1]), cl.ptr(selected),
            cl.ptr(seq_len), np.int32(topk), np.int32(n), cl.ptr(mask), cl.ptr(pos),
            cl.ptr(ridx), cl.ptr(nxt), cl.ptr(sib))
    cl.launch(kernel, (bs,), (block,), args, device)
    return mask, pos, ridx, nxt, sib
