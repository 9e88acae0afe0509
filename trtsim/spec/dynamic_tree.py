"""MTPEagleDynamicTreeWorker: Eagle dynamic-tree drafting, greedy verification.

One step per request (all requests batched, every shape fixed so the step can be captured):
  1. verify the previous tree: the target's prediction at each node (the next truth token when
     the path to the node is on the truth, an off-path token otherwise) -> verify_tree_greedy
     -> the accepted path and its length;
  2. move the KV rows of the accepted nodes to linear positions (relocate_kv);
  3. draft the next tree from the bonus token: K levels, each expanding the top-k nodes
     (one MTP layer, lm_head, softmax, top-k; the drafter is steered like the chain workers),
     keep the N-1 best candidates, link them (build_dynamic_tree).
A request's first step carries a root-only tree, so it emits exactly the target's token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..kernels import (build_dynamic_tree, expand_tree_level, relocate_kv,
                       select_tree_candidates, verify_tree_greedy)
from ..model import SyntheticModel
from .config import SpecConfig
from .mtp import _DTYPES, STEER
from .worker_base import SpecWorker


@dataclass
class TreeTensors:
    """One step's inputs for R requests with N-node trees and K levels:

    candidates, next_token, next_sibling [R, N] int64 (the previous tree; root only at first);
    ancestors [R, N, N] bool (row i: node i and its ancestors); depth [R, N] int64;
    truth [R, 2K+3] int64: truth tokens from the previous root's position on; agree [R, 2K+3]
    bool: the drafter ranks the truth first there; past_lens [R] int64: the previous root's
    position; slot_ids [R] int64.
    """

    candidates: torch.Tensor
    next_token: torch.Tensor
    next_sibling: torch.Tensor
    ancestors: torch.Tensor
    depth: torch.Tensor
    truth: torch.Tensor
    agree: torch.Tensor
    past_lens: torch.Tensor
    slot_ids: torch.Tensor
    num_context: int = 0

    def shape_key(self) -> tuple:
        return tuple(self.candidates.shape)

    def tensors(self):
        return [(k, v) for k, v in vars(self).items() if isinstance(v, torch.Tensor)]


class MTPEagleDynamicTreeWorker(SpecWorker):
    """Eagle dynamic tree on the synthetic model."""

    def __init__(self, config: SpecConfig, device, num_slots: int = 256, seed: int = 0,
                 max_seq: int = 512, **_):
        super().__init__(config, device)
        dtype = _DTYPES[config.dtype]
        self.model = SyntheticModel(config.vocab_size, config.hidden_size, config.acceptance,
                                    seed, self.device, dtype)
        h = config.hidden_size
        gen = torch.Generator().manual_seed(seed + 2)
        self.weight = (torch.randn(h, h, generator=gen) / h ** 0.5).to(self.device, dtype)
        self.lm_head = (torch.randn(h, config.vocab_size, generator=gen) / h ** 0.5).to(
            self.device, dtype)
        self.kv = torch.zeros(num_slots, max_seq, 8, dtype=dtype, device=self.device)

    def _state_tensors(self):
        return [self.kv]

    def _forward_impl(self, t: TreeTensors):
        cfg = self.config
        r, n = t.candidates.shape
        k, topk = cfg.max_draft_len, cfg.tree_topk
        dev = self.device
        rows = torch.arange(r, device=dev).view(-1, 1)
        # 1. the target at each node: on the truth path -> the next truth token
        at_depth = t.truth.gather(1, t.depth)                     # truth at each node's position
        on = (t.candidates == at_depth) | (t.depth == 0)          # the node itself is right
        on_path = ~(t.ancestors & ~on.unsqueeze(1)).any(dim=2)    # ...and all its ancestors
        nxt = t.truth.gather(1, t.depth + 1)
        target = torch.where(on_path, nxt, (nxt + 1) % cfg.vocab_size)
        ridx = rows * n + torch.arange(n, device=dev).view(1, -1)
        predicts, accept_index, accept_num = verify_tree_greedy(
            t.candidates, ridx, t.next_token, t.next_sibling, target, k + 1)
        emitted = accept_num.long() + 1
        # 2. KV rows of the accepted path to linear positions
        relocate_kv(self.kv, accept_index, accept_num, t.past_lens, n, t.slot_ids)
        # 3. the next tree, rooted at the bonus token
        bonus = t.truth.gather(1, emitted.view(-1, 1)).view(-1)   # truth after the path
        levels, scores = [], None
        tokens = bonus
        h = torch.zeros(r, cfg.hidden_size, dtype=self.weight.dtype, device=dev)
        depth0 = emitted + 1                  # truth index of the new root's children
        for level in range(k):
            width = 1 if level == 0 else topk
            h = torch.tanh((h + self.model.embedding[tokens]) @ self.weight)
            logits = (h @ self.lm_head).float()
            # steer: on-truth nodes favour the truth (agree) or the runner-up
            pos = (depth0 + level).clamp(max=t.truth.shape[1] - 1)
            want = t.truth.gather(1, pos.view(-1, 1)).repeat_interleave(width, dim=0).view(-1, 1)
            agree = t.agree.gather(1, pos.view(-1, 1)).repeat_interleave(width, dim=0).view(-1)
            boost = torch.where(agree, STEER, STEER / 2).to(logits.dtype).view(-1, 1)
            logits = logits.scatter_add(1, want, boost)
            logits = logits.scatter_add(1, (want + 1) % cfg.vocab_size, torch.where(
                agree, STEER / 2, STEER).to(logits.dtype).view(-1, 1))
            p = torch.softmax(logits, dim=-1)
            top_p, top_i = torch.topk(p, topk, dim=-1)
            lv = expand_tree_level(level, top_p, top_i, scores, topk)
            levels.append(lv)
            scores = lv.scores
            tokens = lv.input_ids
            h = h.repeat_interleave(topk // width if level == 0 else 1, dim=0) if level == 0 \
                else h.view(r, topk, -1).gather(1, lv.parent_slots.unsqueeze(2).expand(
                    -1, -1, h.shape[-1])).reshape(r * topk, -1)
        parent_list, selected, drafts = select_tree_candidates(levels, bonus, n)
        mask, positions, _, next_token, next_sibling = build_dynamic_tree(
            parent_list, selected, t.past_lens + emitted, topk)
        depth = positions.view(r, n) - (t.past_lens + emitted).view(-1, 1)
        return emitted, (drafts, next_token, next_sibling, mask, depth), predicts
