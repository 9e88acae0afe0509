"""Greedy top-k expansion of an Eagle dynamic tree, level by level, and the choice of the
N-1 best candidates (SGLang's ``select_top_k_tokens`` and ``build_tree_kernel_efficient``
preprocessing), in plain torch on any device. build_dynamic_tree then links the tree."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class TreeLevel:
    """One drafting level.

    input_ids [b*topk]: the tokens of the nodes expanded next (the drafter's next inputs).
    scores [b, topk]: their cumulative probabilities.
    parent_slots [b, topk]: for each expanded node, the slot of the previous level's expanded
      node it descends from (gather the drafter's hidden states with it); zeros at level 0.
    level_scores [b, 1 or topk, topk], level_tokens [b, topk or topk*topk]: every candidate of
      the level; level_parents [b, topk+1 or topk]: flat indices of the nodes expanded next
      (level 0: -1 then 0..topk-1).
    """

    input_ids: torch.Tensor
    scores: torch.Tensor
    parent_slots: torch.Tensor
    level_scores: torch.Tensor
    level_tokens: torch.Tensor
    level_parents: torch.Tensor


def expand_tree_level(level: int, topk_p: torch.Tensor, topk_index: torch.Tensor,
                      scores: torch.Tensor | None, topk: int) -> TreeLevel:
    """Expand one level. ``topk_p``/``topk_index``: the drafter's top-k probabilities and tokens
    at each node expanded by the previous level ([b, topk] at level 0 from the root,
    [b*topk, topk] after); ``scores``: the previous level's TreeLevel.scores (None at 0)."""
    if level == 0:
        b = topk_p.shape[0]
        parents = torch.arange(-1, topk, dtype=torch.long, device=topk_p.device)
        return TreeLevel(topk_index.flatten(), topk_p,
                         torch.zeros((b, topk), dtype=torch.long, device=topk_p.device),
                         topk_p.unsqueeze(1), topk_index, parents.unsqueeze(0).repeat(b, 1))
    b = scores.shape[0]
    expand = scores.unsqueeze(2) * topk_p.reshape(b, topk, topk)  # [b, slot, child]
    cs_p, cs_index = torch.topk(expand.flatten(1), topk, dim=-1)
    tokens = topk_index.reshape(b, topk * topk)
    input_ids = torch.gather(tokens, 1, cs_index).flatten()
    parents = cs_index + (topk * topk * (level - 1) + topk)
    return TreeLevel(input_ids, cs_p, cs_index // topk, expand, tokens, parents)


def select_tree_candidates(levels: list[TreeLevel], verified_id: torch.Tensor,
                           num_draft_tokens: int
                           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keep the N-1 candidates of highest cumulative probability.

    Returns (parent_list [b, topk*(depth-1)+1] (or [b, 0] for one level), selected_index
    [b, N-1] ascending, draft_tokens [b, N] = the verified token then the kept candidates),
    the inputs of build_dynamic_tree and of the verification step."""
    scores = torch.cat([lv.level_scores.flatten(1) for lv in levels], dim=1)
    tokens = torch.cat([lv.level_tokens for lv in levels], dim=1)
    top = torch.topk(scores, num_draft_tokens - 1, dim=-1).indices
    top = torch.sort(top, dim=-1).values
    drafts = torch.cat([verified_id.reshape(-1, 1).to(tokens.dtype),
                        torch.gather(tokens, 1, top)], dim=1)
    if len(levels) > 1:
        parent_list = torch.cat([lv.level_parents for lv in levels[:-1]], dim=1)
    else:
        parent_list = torch.empty((scores.shape[0], 0), dtype=torch.long, device=scores.device)
    return parent_list, top, drafts
