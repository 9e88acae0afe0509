"""Speculative-decoding options (scenario key ``speculative``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

DECODING_TYPES = ("MTP", "MTPEagle", "DynamicTree")
DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class SpecConfig:
    """MTP as TRT-LLM's one-model speculative decoding runs it.

    ``acceptance`` is the per-position probability alpha that a draft equals the target; the
    acceptance length then follows (1 - alpha^(K+1)) / (1 - alpha). ``relaxed`` turns on the
    thinking-phase relaxed acceptance (top-``relaxed_topk`` within ``relaxed_delta``), where a
    rejected draft is the runner-up token. ``tree_*`` size the dynamic tree.
    """

    decoding_type: str = "MTP"
    max_draft_len: int = 3
    acceptance: float = 0.7
    relaxed: bool = False
    relaxed_topk: int = 4
    relaxed_delta: float = 0.5
    tree_topk: int = 2
    tree_nodes: int = 8
    vocab_size: int = 4096
    hidden_size: int = 256
    dtype: str = "float32"
    cuda_graphs: bool = True
    bypass_entry_point: bool = False     # incident 5.1: the worker's forward skips the entry

    TYPES: ClassVar[dict] = {"decoding_type": str, "max_draft_len": int, "acceptance": float,
                             "relaxed": bool, "relaxed_topk": int, "relaxed_delta": float,
                             "tree_topk": int, "tree_nodes": int, "vocab_size": int,
                             "hidden_size": int, "dtype": str, "cuda_graphs": bool,
                             "bypass_entry_point": bool}

    def __post_init__(self) -> None:
        if self.decoding_type not in DECODING_TYPES:
            raise ValueError(f"decoding_type={self.decoding_type!r}; expected one of "
                             f"{', '.join(DECODING_TYPES)}")
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
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype={self.dtype!r}; expected one of {', '.join(DTYPES)}")

    @property
    def expected_acceptance_length(self) -> float:
        """Tokens per step for a chain with i.i.d. per-draft acceptance alpha."""
        a, k = self.acceptance, self.max_draft_len
        return (1 - a ** (k + 1)) / (1 - a)
