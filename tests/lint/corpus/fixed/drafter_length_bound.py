"""The drafter gate, fixed: the ranks agree on the longest sequence (an all-reduce MAX on the
expert-parallel group) before deciding whether to draft."""

import torch
import torch.distributed as dist


class MTPProposer:
    def __init__(self, config, ep_group, drafter):
        self.max_model_len = config.max_model_len
        self.num_speculative_tokens = config.num_speculative_tokens
        self.ep_group = ep_group
        self.drafter = drafter

    def propose(self, batch):
        longest = torch.tensor([max((len(r.token_ids) for r in batch.requests), default=0)])
        dist.all_reduce(longest, op=dist.ReduceOp.MAX, group=self.ep_group)
        if self.max_model_len - int(longest) > self.num_speculative_tokens:
            return self._draft(batch)
        return None

    def _draft(self, batch):
        hidden = self.drafter.embed(batch.input_ids)
        routed = torch.empty_like(hidden)
        self.ep_group.all_to_all_single(routed, hidden)
        return self.drafter.head(routed)
