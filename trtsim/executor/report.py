"""What one executor rank returns: typed, so the jobs that read it cannot misspell a key."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResponseRecord:
    """What a finished request's response carries back to the client (plain data)."""

    request_id: int
    state: str                 # LlmRequestState value
    prompt_len: int
    generated: int
    stamps: dict[str, int] = field(default_factory=dict)   # event -> executor iteration


@dataclass(frozen=True)
class IterationStats:
    """One iteration of one rank."""

    iteration: int
    batch: int
    ctx_tokens: int
    gen_requests: int
    forward_ms: float


@dataclass(frozen=True)
class ExecutorReport:
    """One rank's run of the executor loop."""

    role: str
    rank: int
    iterations: int
    finished: list[ResponseRecord]         # rank 0: every request's final record
    unfinished: list[int]
    stats: list[IterationStats]
    skipped_checks: int                    # transfer checks the sticky short-circuit skipped
    kv_bytes: int
    kv_verified: int                       # received KV equal to the prefill's
    kv_mismatches: list[int]
