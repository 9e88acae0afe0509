"""Speculative-decoding options (scenario key ``speculative``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..checks import require_choices


def _help(text: str, default):
    return field(default=default, metadata={"help": text})


@dataclass(frozen=True)
class SpecConfig:
    """MTP as TRT-LLM's one-model speculative decoding runs it.

    ``acceptance`` is the per-position probability alpha that a draft equals the target; the
    acceptance length then follows (1 - alpha^(K+1)) / (1 - alpha). ``relaxed`` turns on the
    thinking-phase relaxed acceptance (top-``relaxed_topk`` within ``relaxed_delta``), where a
    rejected draft is the runner-up token. ``tree_*`` size the dynamic tree.
    """

    decoding_type: Literal["MTP", "MTPEagle", "DynamicTree"] = _help(
        "the worker: MTP (vanilla), MTPEagle (one layer applied K times), DynamicTree", "MTP")
    max_draft_len: int = _help("K, drafts per step (num_nextn_predict_layers)", 3)
    acceptance: float = _help("per-draft acceptance probability alpha of the synthetic model", 0.7)
    relaxed: bool = _help("thinking-phase relaxed acceptance", False)
    relaxed_topk: int = _help("relaxed acceptance: candidates per position", 4)
    relaxed_delta: float = _help("relaxed acceptance: probability margin to the top-1", 0.5)
    tree_topk: int = _help("dynamic tree: children expanded per node", 2)
    tree_nodes: int = _help("dynamic tree: nodes including the root", 8)
    vocab_size: int = _help("vocabulary of the synthetic model", 4096)
    hidden_size: int = _help("hidden size of the synthetic model", 256)
    dtype: Literal["float32", "float16", "bfloat16"] = _help("logits and hidden dtype", "float32")
    cuda_graphs: bool = _help("replay the worker step from a CUDA graph on a GPU", True)
    bypass_entry_point: bool = _help(
        "incident 5.1: the worker's forward skips the entry point", False)

    def __post_init__(self) -> None:
        require_choices(self)
        if not 1 <= self.max_draft_len <= 63:
            raise ValueError(f"max_draft_len={self.max_draft_len!r} must be in 1..63")
        if not 0.0 <= self.acceptance < 1.0:
            raise ValueError(f"acceptance={self.acceptance!r} must be in [0, 1)")
        for name in ("relaxed_topk", "tree_topk", "vocab_size", "hidden_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)!r} must be >= 1")
        if self.tree_nodes < 2:
            raise ValueError(f"tree_nodes={self.tree_nodes!r} must be >= 2 (root and a child)")
        if not 0.0 <= self.relaxed_delta <= 1.0:
            raise ValueError(f"relaxed_delta={self.relaxed_delta!r} must be in [0, 1]")

    @property
    def expected_acceptance_length(self) -> float:
        """Tokens per step for a chain with i.i.d. per-draft acceptance alpha."""
        a, k = self.acceptance, self.max_draft_len
        return (1 - a ** (k + 1)) / (1 - a)
