"""The gen-only benchmark's fill gate (DESIGN 5.4): forward only once the batch is full.

In gen-only benchmark mode a generation server waits until every request is fetched, every
transfer has landed and nothing is still being received, so the benchmark measures full
batches. Each TP x CP rank reports its ``FillStatus`` (one ``tp_cp_allgather``); the gate opens
when every member is ready. It must not wait forever: once every request is fetched and no
transfer is in progress, a request that fits in no rank's KV cache can never start, and the
gate fails -- at once (``fail_fast``, TensorRT-LLM's behaviour) or after a stall watchdog's
patience (the cherry-pick of incident 5.4, which never fires within one iteration).
"""

from __future__ import annotations

from dataclasses import dataclass

INSUFFICIENT_KV = "Insufficient KV cache for gen-only benchmark mode"


@dataclass(frozen=True)
class FillStatus:
    """One rank's view: all requests fetched, no request mid-receive, its transfers done,
    and the waiting requests that fit in none of its free KV blocks."""

    fetched_all: bool
    settled: bool
    transfers_done: bool
    unfit: tuple[int, ...]

    @property
    def ready(self) -> bool:
        return self.fetched_all and self.settled and self.transfers_done


@dataclass(frozen=True)
class FillDecision:
    """The gate's verdict for one iteration: forward or not, the stall count carried to the
    next iteration, and the requests that fit nowhere when the gate gives up (else empty)."""

    ready: bool
    stall_iters: int
    give_up: tuple[int, ...] = ()


def fill_decision(everyone: list[FillStatus], stall_iters: int, limit: int) -> FillDecision:
    """Open when every member is ready; count a stall while every request is fetched, no
    transfer runs and some request fits nowhere; give up once the stall reaches ``limit``."""
    if all(s.ready for s in everyone):
        return FillDecision(True, 0)
    stuck = all(s.fetched_all and s.transfers_done for s in everyone) and any(
        s.unfit for s in everyone)
    stall_iters = stall_iters + 1 if stuck else 0
    if stall_iters >= limit:
        return FillDecision(False, stall_iters, tuple(sorted({r for s in everyone
                                                              for r in s.unfit})))
    return FillDecision(False, stall_iters)
