"""Loops whose counts are the same on every rank (layers, configured steps), over tensors
that differ by rank; a timeout checked after the collective, on the agreed value."""

import time

import torch
import torch.distributed as dist


class GradSync:
    def __init__(self, model, config, group):
        self.layers = list(model.layers)
        self.num_microbatches = config.num_microbatches
        self.group = group

    def sync(self, grads_by_rank):
        for layer in self.layers:
            dist.all_reduce(layer.weight.grad, group=self.group)
        for step in range(self.num_microbatches):
            chunk = grads_by_rank[step] if step < len(grads_by_rank) else torch.zeros(1)
            dist.all_reduce(chunk, group=self.group)

    def deadline_passed(self, start, budget_s):
        late = torch.tensor([time.monotonic() - start > budget_s], dtype=torch.int32)
        dist.all_reduce(late, op=dist.ReduceOp.MAX, group=self.group)
        if bool(late.item()):
            dist.barrier(group=self.group)
            return True
        return False
