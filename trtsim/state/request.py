"""Requests with the runtime's states (TRT-LLM's LlmRequestState names)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from .fault import Fault


class LlmRequestState(enum.Enum):
    CONTEXT_INIT = "context_init"
    GENERATION_IN_PROGRESS = "generation_in_progress"
    GENERATION_COMPLETE = "generation_complete"
    DISAGG_GENERATION_INIT = "disagg_generation_init"
    DISAGG_CONTEXT_TRANS_IN_PROGRESS = "disagg_context_trans_in_progress"
    DISAGG_CONTEXT_COMPLETE = "disagg_context_complete"
    DISAGG_GENERATION_TRANS_IN_PROGRESS = "disagg_generation_trans_in_progress"
    DISAGG_GENERATION_TRANS_COMPLETE = "disagg_generation_trans_complete"
    DISAGG_TRANS_ERROR = "disagg_trans_error"
    CANCELLED = "cancelled"


@dataclass
class LlmRequest:
    """One request as one instance sees it.

    ``request_id`` is the id both instances share (TRT-LLM's disagg request id); the DP ranks
    are the attention-DP owners the disaggregated router chose on each side.
    """

    request_id: int
    prompt_len: int
    max_new_tokens: int = 1
    is_context_only: bool = False
    is_generation_only: bool = False
    ctx_dp_rank: int = 0
    gen_dp_rank: int = 0
    arrival_iter: int = 0
    state: LlmRequestState = LlmRequestState.CONTEXT_INIT
    tokens: list[int] = field(default_factory=list)      # generated tokens so far
    fault: Fault | None = None                           # injected (scenario key faults)
    # iteration stamps for metrics: {event: executor iteration}
    stamps: dict[str, int] = field(default_factory=dict)

    @property
    def num_generated(self) -> int:
        return len(self.tokens)

    @property
    def is_finished(self) -> bool:
        return self.state in (LlmRequestState.GENERATION_COMPLETE,
                              LlmRequestState.DISAGG_CONTEXT_COMPLETE,
                              LlmRequestState.DISAGG_TRANS_ERROR, LlmRequestState.CANCELLED)

    @property
    def seq_len(self) -> int:
        return self.prompt_len + self.num_generated
