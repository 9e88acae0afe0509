"""Figures measured by trtsim's own benchmarks and used by the performance model, with where
they come from. (Host collectives: ``host_collectives`` reads data/host_gather.json; the
virtual clock's gloo fit is comm_cost.HOST_GATHER_MEASURED.)"""

from __future__ import annotations

# Incident 5.1: one MTP worker step launched eagerly (a subclass bypassing the entry point)
# minus the same step replayed from a CUDA graph, seconds, by batch per rank.
# benchmarks/bench_worker_step.py on one NVIDIA H200 (torch 2.11, CUDA 13), 2026-11-29,
# DeepSeek-V3-like drafter sizes (hidden 7168, vocab 129,280, bf16, K = 3); median of 30
# steps; docs/figures/worker_step_h200.log. Batch 128's eager step was not measured:
# the batch-32 figure stands in for larger batches.
WORKER_EAGER_MINUS_GRAPH_S = {8: 2.294e-3 - 1.646e-3, 32: 2.071e-3 - 1.834e-3}
WORKER_STEP_SOURCE = "benchmarks/bench_worker_step.py, NVIDIA H200, 2026-11-29"


def worker_bypass_overhead(batch: int) -> float:
    """Extra seconds per generation step when the worker skips graph replay."""
    sizes = sorted(WORKER_EAGER_MINUS_GRAPH_S)
    nearest = min(sizes, key=lambda b: (abs(b - batch), b))
    return WORKER_EAGER_MINUS_GRAPH_S[nearest]
