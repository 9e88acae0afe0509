"""The speculative worker's single entry point, and why it must stay single.

``SpecWorker.forward`` is the only way into a worker step: it opens the profiling range (NVTX on
CUDA), dispatches to CUDA-graph capture (first time a batch shape is seen) or replay, and only
then calls ``_forward_impl``. Incident 5.1: a dynamic-tree worker subclass overrode
``forward`` itself, silently losing the graph dispatch and the ranges; throughput regressed by
about 10%. trtsim refuses such a class when it is defined: ``TypeError`` naming the class and
``_forward_impl``. (``incident.py`` builds the bypassing worker on purpose, for measurement.)

Graph discipline: every tensor a step reads lives in a static buffer keyed by the batch shape;
``forward`` copies the step's inputs into it, replays, and returns views of the static outputs.
Steps with a collective inside (TP-sharded drafting) run eagerly.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields

import torch

from .config import SpecConfig


@dataclass
class StepTensors:
    """One step's inputs on the worker's device (shapes for R requests, nc of them context):

    input_ids [T] int32 (context: the last K prompt tokens; generation: last token + K drafts),
    seq_lens [R] int32, slot_ids [R] int32, truth / runner [nc + ng*(K+1)] int64 (the target's
    top-1 and runner-up per logits row), drafts [ng*K] int32, steer [R, K+1, K] int64 (the
    drafter's intended tokens for the next step, by how many tokens this step emits).
    """

    input_ids: torch.Tensor
    seq_lens: torch.Tensor
    slot_ids: torch.Tensor
    truth: torch.Tensor
    runner: torch.Tensor
    drafts: torch.Tensor
    steer: torch.Tensor
    num_context: int

    def shape_key(self) -> tuple:
        return (self.num_context, self.seq_lens.numel())

    def tensors(self):
        return [(f.name, getattr(self, f.name)) for f in fields(self)
                if isinstance(getattr(self, f.name), torch.Tensor)]


class SpecWorker:
    """Base of the MTP workers. Subclasses implement ``_forward_impl`` only."""

    # set only by incident.py's deliberately unchecked construction
    _entry_point_checked = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "forward" in cls.__dict__:
            raise TypeError(
                f"{cls.__name__} overrides forward(); implement _forward_impl() instead: "
                "forward is the single entry point that wraps the profiling ranges and the "
                "CUDA-graph capture/replay dispatch")

    def __init__(self, config: SpecConfig, device: torch.device):
        self.config = config
        self.device = torch.device(device)
        self._graphs: dict[tuple, tuple[torch.cuda.CUDAGraph, StepTensors, tuple]] = {}
        self.num_graph_replays = 0
        self.num_eager_steps = 0

    @property
    def uses_graphs(self) -> bool:
        return self.config.cuda_graphs and self.device.type == "cuda" and not self.has_collectives

    @property
    def has_collectives(self) -> bool:
        return False

    def forward(self, inputs: StepTensors):
        """The entry point: profiling range, graph dispatch, then ``_forward_impl``."""
        with _range(f"{type(self).__name__}.forward", self.device):
            if not self.uses_graphs:
                self.num_eager_steps += 1
                return self._forward_impl(inputs)
            return self._replay(inputs)

    def _forward_impl(self, inputs: StepTensors):
        raise NotImplementedError

    def _state_tensors(self) -> list[torch.Tensor]:
        """Tensors a step updates in place (rings, KV): restored after a graph's warm-up."""
        return []

    def _replay(self, inputs: StepTensors):
        key = inputs.shape_key() + tuple(t.shape for _, t in inputs.tensors())
        entry = self._graphs.get(key)
        if entry is None:
            static = type(inputs)(**{f.name: getattr(inputs, f.name) for f in fields(inputs)})
            for name, t in inputs.tensors():
                setattr(static, name, t.clone())
            saved = [t.clone() for t in self._state_tensors()]
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                self._forward_impl(static)          # warm-up: compiles, allocates workspaces
            torch.cuda.current_stream().wait_stream(stream)
            for t, s in zip(self._state_tensors(), saved):   # the warm-up must leave no trace
                t.copy_(s)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outputs = self._forward_impl(static)
            entry = self._graphs[key] = (graph, static, outputs)
        graph, static, outputs = entry
        for name, t in inputs.tensors():
            getattr(static, name).copy_(t)
        graph.replay()
        self.num_graph_replays += 1
        return outputs


@contextlib.contextmanager
def _range(name: str, device: torch.device):
    if device.type == "cuda":
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
    else:
        yield
