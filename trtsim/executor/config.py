"""Executor and serving-workload configuration (frozen, validated on construction)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from ..checks import MAX_REQUESTS, require_at_most, require_choices, require_int, require_ints
from .call_pattern import PATTERNS, CallPattern, ExecutorVersion


def _help(text: str, default):
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class ExecutorConfig:
    """PyExecutor options (scenario key ``executor``).

    ``loop``: auto picks ``pp`` when pp > 1, else ``plain``; as in TensorRT-LLM, pp > 1 runs the
    PP loop whatever the overlap setting. ``version``: whose transceiver call pattern the loops
    follow (``call_pattern.py``). ``pp_handling``: how PP stages
    handle executed batches: ``ring_count`` (after the executed-batch count went round the
    ring, every stage in the same iteration; the runtime's way) or ``on_arrival`` (each stage
    right after its own forward of the micro-batch; stages then act in different iterations).
    """

    loop: Literal["auto", "plain", "overlap", "pp"] = _help(
        "executor loop; auto: pp when pp > 1, else plain", "auto")
    max_iterations: int = _help("iterations before a rank stops", 400)
    max_batch_size: int = _help("requests per forward", 8)
    max_num_tokens: int = _help("tokens per forward", 1024)
    kv_blocks: int = _help("KV-cache blocks per layer on each rank", 256)
    enable_inflight_cancel: bool = _help("step 1: the error-sync collective", False)
    benchmark_fill: Literal["off", "fail_fast", "watchdog"] = _help(
        "gen-only benchmark gate: off, fail_fast (fail at once when nothing fits), watchdog "
        "(fail after watchdog_iters stalled iterations)", "off")
    watchdog_iters: int = _help("the stall watchdog's patience (benchmark_fill: watchdog)", 50)
    pp_handling: Literal["ring_count", "on_arrival"] = _help(
        "how PP stages handle executed batches: ring_count (every stage in the same iteration) "
        "or on_arrival (each stage right after its own forward)", "ring_count")
    forward_ms: float = _help("the stand-in forward's modelled cost per step (ms)", 1.0)
    version: ExecutorVersion = _help(
        "whose transceiver call pattern the loops follow: trtsim, classic (TensorRT-LLM's "
        "pre-coordinator PyExecutor) or coordinator (its DisaggTransferCoordinator)", "trtsim")

    def __post_init__(self) -> None:
        require_choices(self)
        require_ints(self, "max_iterations", "max_batch_size", "max_num_tokens", "kv_blocks",
                     "watchdog_iters")
        if not isinstance(self.forward_ms, (int, float)) or self.forward_ms < 0:
            raise ValueError(f"forward_ms={self.forward_ms!r} must be a number >= 0")

    @property
    def pattern(self) -> CallPattern:
        return PATTERNS[self.version]

    def loop_for(self, pp_size: int) -> str:
        if self.loop == "pp" and pp_size == 1:
            raise ValueError("loop='pp' needs pp > 1")
        if pp_size > 1:
            return "pp"
        return "plain" if self.loop == "auto" else self.loop


@dataclass(frozen=True)
class ServingWorkload:
    """Requests of a serving run: how many, how long, when they arrive.

    Lengths are an int or [low, high] (uniform, drawn with ``seed``). Request i arrives at
    both instances (generation first) at their iteration ``i * arrival_interval`` (0: all
    at once).
    """

    num_requests: int = _help("requests in the workload", 32)
    input_len: int | tuple[int, int] = _help("prompt length, or [low, high]", 64)
    output_len: int | tuple[int, int] = _help("tokens to generate, or [low, high]", 8)
    arrival_interval: int = _help("iterations between arrivals (0: all at once)", 1)
    seed: int = _help("seed of the drawn lengths (default: the scenario's)", 0)
    dp_offset: int = _help("attention DP: request i on DP rank (i + dp_offset) % tp", 0)

    def __post_init__(self) -> None:
        require_int("num_requests", self.num_requests)
        require_at_most("num_requests", self.num_requests, MAX_REQUESTS, "requests")
        require_int("arrival_interval", self.arrival_interval, low=0)
        for name in ("input_len", "output_len"):
            value = getattr(self, name)
            bounds = value if isinstance(value, tuple) else (value, value)
            if len(bounds) != 2 or any(not isinstance(b, int) or b < 1 for b in bounds) \
                    or bounds[0] > bounds[1]:
                raise ValueError(f"{name}={value!r} must be an integer >= 1 or [low, high]")

    def lengths(self) -> list[tuple[int, int]]:
        """(input, output) length of every request, deterministic in ``seed``."""
        rng = random.Random(self.seed)

        def draw(v):
            return v if isinstance(v, int) else rng.randint(*v)
        return [(draw(self.input_len), draw(self.output_len)) for _ in range(self.num_requests)]
