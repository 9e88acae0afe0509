"""Binds torch.distributed functions by name at import, before any launch (SGLang binds
``all_gather_single`` so; torch before 2.12 has only ``all_gather_into_tensor``, same shape)."""

import torch

try:
    from torch.distributed import all_gather_single as gather_into
except ImportError:
    from torch.distributed import all_gather_into_tensor as gather_into
from torch.distributed import all_reduce

GATHER_NAME = gather_into.__name__


def gather_and_sum(rank: int, world: int) -> tuple[list, float]:
    out = torch.empty(world)
    gather_into(out, torch.tensor([float(rank)]))
    t = torch.ones(1)
    all_reduce(t)
    return out.tolist(), t.item()
