"""Legal programs whose rank-local values never decide whether a collective is entered:
rank-dependent payloads, ``if rank == 0: print(...)``, ``if world_size == 1: return x``,
per-rank logging, equal loops over different tensors, the root broadcast; and one whose gate
is declared uniform in the source. Observe lists no latent gate for any of them."""

from __future__ import annotations

import logging

log = logging.getLogger("gate_legal_programs")


def _reduce(dist, x):
    return dist.allreduce(x, label="payload")


def rank_payloads(dist, steps):
    return [_reduce(dist, float(dist.global_rank * 10 + i)) for i in range(steps)]


def rank_zero_prints(dist, steps):
    total = 0.0
    for i in range(steps):
        if dist.global_rank == 0:
            print(f"step {i}")
        total = _reduce(dist, total + dist.global_rank)
    return total


def _maybe_reduce(dist, x):
    if dist.world_size == 1:
        return x
    return _reduce(dist, x)


def world_size_early_exit(dist, steps):
    return [_maybe_reduce(dist, float(dist.global_rank + i)) for i in range(steps)]


def per_rank_logging(dist, steps):
    for i in range(steps):
        loss = float(dist.global_rank + i)
        if loss > 100.0:
            log.warning("rank %d loss %f", dist.global_rank, loss)
        _reduce(dist, loss)
    return True


def equal_loops(dist, steps):
    import torch
    tensors = [torch.full((2,), float(dist.global_rank + i)) for i in range(steps)]
    return [dist.allreduce(t, label="layer") for t in tensors]


def root_broadcast(dist, steps):
    out = []
    for i in range(steps):
        if dist.global_rank == 0:
            out.append(dist.broadcast(f"name-{i}", root=0))
        else:
            out.append(dist.broadcast(None, root=0))
    return out


def suppressed(dist, schedule):
    out = []
    for step in schedule:
        n = step[dist.global_rank]
        if n > 0:  # trtsim: uniform(world) -- the schedule never gives a rank zero tokens
            out.append(_reduce(dist, n))
    return out
