"""The transceiver's configuration and the two instances it moves KV between.

``version`` names one of TensorRT-LLM's stored KvCacheTransceiverV2 versions; the properties
below say which gathers that version runs (docs/PERF_MODEL.md, "The call pattern").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..checks import choices, require_choices
from ..layout.topology import InstanceSpec


@dataclass(frozen=True)
class TransceiverConfig:
    """The transceiver's options (scenario key ``transceiver``)."""

    sticky_skip: Literal["off", "conservative", "unguarded", "guarded"] = field(
        default="off", metadata={"help": "the sticky-role short-circuit of the consensus "
                                 "gathers: off, conservative (no sync needed at all), "
                                 "unguarded (no session ever opened), guarded (pp == 1)"})
    outcome: Literal["packed", "separate"] = field(
        default="packed", metadata={"help": "outcome consensus: one gather of the three "
                                    "lists, or three gathers (older code)"})
    timeout_iters: int | None = field(
        default=None, metadata={"help": "a session older than this many iterations is "
                                "reported timed out (null: never)"})
    runtime: Literal["cpp", "python"] = field(
        default="cpp", metadata={"help": "TRT-LLM's transceiver_runtime: what the cost "
                                 "model charges per request and poll"})
    async_consensus: bool = field(
        default=False, metadata={"help": "context PP consensus as p2p ballots round the ring "
                                 "(TP1/PP>1) instead of blocking pp_allgathers"})
    version: Literal["trtsim", "A", "B", "C", "E"] = field(
        default="trtsim", metadata={"help": "the TensorRT-LLM KvCacheTransceiverV2 whose "
                                    "gathers are followed: A (three outcome gathers, no skip), "
                                    "B (markers, three outcome gathers), C or E (one packed "
                                    "outcome gather, no prepare gather while nothing waits); "
                                    "trtsim: sticky_skip on both sides, outcome as set"})

    def __post_init__(self) -> None:
        require_choices(self)
        if self.timeout_iters is not None and self.timeout_iters < 1:
            raise ValueError(f"timeout_iters={self.timeout_iters!r} must be >= 1")

    @property
    def outcome_gathers(self) -> str:
        """packed or separate: the version's outcome consensus (trtsim: ``outcome``)."""
        return {"A": "separate", "B": "separate", "C": "packed", "E": "packed"}.get(
            self.version, self.outcome)

    def sticky_for(self, side: str) -> str:
        """The short-circuit rule of one side (ctx: send checks, gen: receive checks)."""
        if side == "gen" and self.version != "trtsim":
            return "off" if self.version == "A" else "conservative"
        return self.sticky_skip

    @property
    def prepare_gathers_when_idle(self) -> bool:
        """Whether prepare_context_requests gathers with no request waiting (A, B, trtsim)."""
        return self.version not in ("C", "E")


STICKY_VARIANTS = choices(TransceiverConfig, "sticky_skip")


@dataclass(frozen=True)
class DisaggPeers:
    """The two instances a transceiver moves KV between, by name and spec."""

    ctx_name: str
    ctx: InstanceSpec
    gen_name: str
    gen: InstanceSpec
