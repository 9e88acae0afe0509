"""Where ranks run: the backends under the guard, and ``run_ranks``, which picks one.

``inproc`` (every rank in this process, scheduled deterministically by a seed), ``process``
(one spawned process per rank on torch.distributed: the launcher side, the rank side, the
shared-memory ledger and the deadlock monitor) and ``external`` (processes someone else
started: torchrun's and mpirun's ranks, their store-backed ledger). The top of the
communication stack: may import ``intercept``, ``comm``, ``guard``, ``calls`` and below.
"""
