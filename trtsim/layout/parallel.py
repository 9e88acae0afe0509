"""The parallel layout of one instance (tp x pp x cp, optional attention DP): its groups.

Invariants (TensorRT-LLM's Mapping), for ``world = tp * pp * cp``:
    cp_rank = rank % cp
    tp_rank = (rank % (tp * cp)) // cp
    pp_rank = rank // (tp * cp)
The TP group of a rank holds the ranks with its pp_rank and cp_rank; the PP group holds
``i, i + tp*cp, ...`` with ``i = rank % (tp*cp)``. With attention DP, ``dp_size = tp`` and
``dp_rank = tp_rank``; without it, ``dp_size = 1`` and ``dp_rank = 0``.

``ParallelLayout`` is the one layout type: the factors of an instance. ``Mapping``
(``mapping.py``) is one rank's view of a layout, spelled as TensorRT-LLM spells it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ..checks import MAX_RANKS, require_ints
from .groups import GROUP_KINDS, all_groups, pp_layer_split
from .mapping import Mapping

__all__ = ["GROUP_KINDS", "ParallelLayout", "pp_layer_split"]



@dataclass(frozen=True)
class ParallelLayout:
    """The parallel factors of one instance: ``tp_size`` GPUs per PP stage (times ``cp_size``),
    ``pp_size`` stages, ``ep_size`` expert-parallel ranks among the TP ranks."""

    # metadata: the scenario key of each factor and what it means (the schema reads both)
    tp_size: int = field(default=1, metadata={"key": "tp", "help": "tensor-parallel ranks per PP stage"})
    pp_size: int = field(default=1, metadata={"key": "pp", "help": "pipeline stages"})
    cp_size: int = field(default=1, metadata={"key": "cp", "help": "context-parallel ranks"})
    ep_size: int = field(default=1, metadata={"key": "ep", "help": "expert-parallel ranks (divides tp)"})
    enable_attention_dp: bool = field(default=False, metadata={
        "key": "attention_dp", "help": "attention data parallelism: each TP rank its own requests"})

    def __post_init__(self) -> None:
        require_ints(self, "tp_size", "pp_size", "cp_size", "ep_size")
        if self.world_size > MAX_RANKS:         # before anything builds per-rank tables
            factors = {"tp_size": self.tp_size, "pp_size": self.pp_size, "cp_size": self.cp_size}
            big = max(factors, key=factors.get)
            raise ValueError(f"{big}={factors[big]}: tp x pp x cp = {self.world_size:,} ranks, "
                             f"more than the limit of {MAX_RANKS:,} ranks")
        if self.tp_size % self.ep_size:
            raise ValueError(f"ep_size={self.ep_size} must divide tp_size={self.tp_size}")
        if not isinstance(self.enable_attention_dp, bool):
            raise ValueError(f"enable_attention_dp={self.enable_attention_dp!r} must be a bool")

    @property
    def world_size(self) -> int:
        return self.tp_size * self.pp_size * self.cp_size

    @property
    def dp_size(self) -> int:
        return self.tp_size if self.enable_attention_dp else 1

    @property
    def attn_tp_size(self) -> int:
        """Ranks one request's attention is split over (1 under attention DP)."""
        return 1 if self.enable_attention_dp else self.tp_size

    @property
    def moe_tp_size(self) -> int:
        return self.tp_size // self.ep_size

    def group_size(self, kind: str) -> int:
        """Members of one group of ``kind`` (every group of a kind has the same size)."""
        sizes = {"tp": self.tp_size, "pp": self.pp_size, "cp": self.cp_size,
                 "tp_cp": self.tp_size * self.cp_size, "world": self.world_size}
        return sizes[kind]

    def mapping(self, rank: int) -> Mapping:
        """Rank ``rank``'s Mapping of this layout, built once per rank (a Mapping is frozen,
        and the transfer plan asks for the same ones thousands of times per run)."""
        m = self._mappings.get(rank)
        if m is None:
            m = self._mappings[rank] = Mapping(
                world_size=self.world_size, rank=rank, tp_size=self.tp_size,
                pp_size=self.pp_size, cp_size=self.cp_size, moe_ep_size=self.ep_size,
                enable_attention_dp=self.enable_attention_dp)
        return m

    @functools.cached_property
    def _mappings(self) -> dict[int, Mapping]:
        """rank -> Mapping: derived state, not a field (neither compared, hashed nor pickled)."""
        return {}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_mappings"}

    def groups(self, kind: str) -> list[tuple[int, ...]]:
        """Every group of ``kind``, as ascending local ranks, each once: O(world)."""
        return all_groups(kind, self.tp_size, self.pp_size, self.cp_size)
