"""vLLM #49027/#44954's shape: the MTP drafter runs only while the longest sequence of the
rank's batch stays below the length bound; the drafter's MoE layer exchanges tokens on the
expert-parallel group, so a rank near the bound leaves its peers in the all-to-all."""

import torch


class MTPProposer:
    def __init__(self, config, ep_group, drafter):
        self.max_model_len = config.max_model_len
        self.num_speculative_tokens = config.num_speculative_tokens
        self.ep_group = ep_group
        self.drafter = drafter

    def propose(self, batch):
        longest = max((len(r.token_ids) for r in batch.requests), default=0)
        room = self.max_model_len - longest
        if room > self.num_speculative_tokens:  # GATE
            return self._draft(batch)
        return None

    def _draft(self, batch):
        hidden = self.drafter.embed(batch.input_ids)
        routed = torch.empty_like(hidden)
        self.ep_group.all_to_all_single(routed, hidden)
        return self.drafter.head(routed)
