"""Binds torch.distributed functions by name at import, before any launch (SGLang binds
``all_gather_single`` so)."""

import torch
from torch.distributed import all_gather_single, all_reduce


def gather_and_sum(rank: int, world: int) -> tuple[list, float]:
    out = torch.empty(world)
    all_gather_single(out, torch.tensor([float(rank)]))
    t = torch.ones(1)
    all_reduce(t)
    return out.tolist(), t.item()
