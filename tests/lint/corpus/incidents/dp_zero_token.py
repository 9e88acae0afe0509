"""vLLM #43547's shape: a DP rank whose step has no tokens skips the DP all-reduce that its
peers enter (the token test sits in the caller, the all-reduce two helpers down)."""

import torch
import torch.distributed as dist


class DPModelRunner:
    def __init__(self, dp_group, dp_size, model):
        self.dp_group = dp_group
        self.dp_size = dp_size
        self.model = model

    def execute_model(self, scheduler_output):
        num_tokens = scheduler_output.total_num_scheduled_tokens
        if num_tokens == 0:  # GATE
            return None
        tokens_across_dp = self._coordinate(num_tokens)
        return self.model(scheduler_output.input_ids, tokens_across_dp)

    def _coordinate(self, num_tokens):
        return self._all_reduce_counts(num_tokens)

    def _all_reduce_counts(self, num_tokens):
        counts = torch.zeros(self.dp_size, dtype=torch.int32)
        counts[dist.get_rank(self.dp_group)] = num_tokens
        dist.all_reduce(counts, group=self.dp_group)
        return counts
