"""Executor and serving-workload configuration (frozen, validated on construction)."""

from __future__ import annotations

import random

from ..checks import require_int, require_ints
from dataclasses import dataclass

LOOPS = ("auto", "plain", "overlap", "pp")
PP_HANDLING = ("ring_count", "on_arrival")
BENCHMARK_FILL = ("off", "fail_fast", "watchdog")


@dataclass(frozen=True)
class ExecutorConfig:
    """PyExecutor options (scenario key ``executor``).

    ``loop``: auto picks ``pp`` when pp > 1, else ``plain``. ``pp_handling``: how PP stages
    handle executed batches: ``ring_count`` (after the executed-batch count went round the
    ring, every stage in the same iteration; the runtime's way) or ``on_arrival`` (each stage
    right after its own forward of the micro-batch; stages then act in different iterations).
    """

    loop: str = "auto"
    max_iterations: int = 400
    max_batch_size: int = 8
    max_num_tokens: int = 1024
    kv_blocks: int = 256
    enable_inflight_cancel: bool = False   # step 1 error sync
    benchmark_fill: str = "off"            # gen-only benchmark gate: off | fail_fast | watchdog
    watchdog_iters: int = 50               # the stall watchdog's patience (benchmark_fill)
    async_consensus: bool = False          # ctx PP consensus as p2p messages round the ring
    pp_handling: str = "ring_count"
    forward_ms: float = 1.0                # the stand-in forward's modelled cost per step

    def __post_init__(self) -> None:
        if self.loop not in LOOPS:
            raise ValueError(f"loop={self.loop!r}; expected one of {', '.join(LOOPS)}")
        if self.benchmark_fill not in BENCHMARK_FILL:
            raise ValueError(f"benchmark_fill={self.benchmark_fill!r}; expected one of "
                             f"{', '.join(BENCHMARK_FILL)}")
        if self.pp_handling not in PP_HANDLING:
            raise ValueError(f"pp_handling={self.pp_handling!r}; expected one of "
                             f"{', '.join(PP_HANDLING)}")
        require_ints(self, "max_iterations", "max_batch_size", "max_num_tokens", "kv_blocks",
                     "watchdog_iters")
        if not isinstance(self.forward_ms, (int, float)) or self.forward_ms < 0:
            raise ValueError(f"forward_ms={self.forward_ms!r} must be a number >= 0")

    def loop_for(self, pp_size: int) -> str:
        if self.loop == "auto":
            return "pp" if pp_size > 1 else "plain"
        if self.loop == "pp" and pp_size == 1:
            raise ValueError("loop='pp' needs pp > 1")
        if self.loop != "pp" and pp_size > 1:
            raise ValueError(f"loop={self.loop!r} cannot drive pp={pp_size}: use 'pp' or 'auto'")
        return self.loop


@dataclass(frozen=True)
class ServingWorkload:
    """Requests of a serving run: how many, how long, when they arrive.

    Lengths are an int or [low, high] (uniform, drawn with ``seed``). Request i arrives at
    both instances (generation first) at their iteration ``i * arrival_interval`` (0: all
    at once).
    """

    num_requests: int = 32
    input_len: int | tuple[int, int] = 64
    output_len: int | tuple[int, int] = 8
    arrival_interval: int = 1
    seed: int = 0
    dp_offset: int = 0          # attention DP: request i on DP rank (i + dp_offset) % tp

    def __post_init__(self) -> None:
        require_int("num_requests", self.num_requests)
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
