"""The DP zero-token step, fixed: every DP rank coordinates first; the skip is decided on the
all-reduced counts, which are the same on every DP rank."""

import torch
import torch.distributed as dist


class DPModelRunner:
    def __init__(self, dp_group, dp_size, model):
        self.dp_group = dp_group
        self.dp_size = dp_size
        self.model = model

    def execute_model(self, scheduler_output):
        num_tokens = scheduler_output.total_num_scheduled_tokens
        tokens_across_dp = self._coordinate(num_tokens)
        if int(tokens_across_dp.sum()) == 0:
            return None
        hidden = self.model(scheduler_output.input_ids, tokens_across_dp)
        dist.all_reduce(hidden, group=self.dp_group)
        return hidden

    def _coordinate(self, num_tokens):
        counts = torch.zeros(self.dp_size, dtype=torch.int32)
        counts[dist.get_rank(self.dp_group)] = num_tokens
        dist.all_reduce(counts, group=self.dp_group)
        return counts
