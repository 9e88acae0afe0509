"""TensorRT-LLM's ``Mapping``: one rank's position in an instance, spelled as TensorRT-LLM
spells it (``tensorrt_llm/mapping.py``), so code written against it runs unchanged.

Invariants, for ``world = tp * pp * cp`` (CP innermost, TensorRT-LLM's current layout):
    cp_rank = rank % cp
    tp_rank = (rank % (tp * cp)) // cp
    pp_rank = rank // (tp * cp)
The TP group of a rank holds the ranks with its pp_rank and cp_rank; the PP group holds
``i, i + tp*cp, ...`` with ``i = rank % (tp*cp)``. With attention DP, ``dp_size = tp`` and
``dp_rank = tp_rank``; without it, ``dp_size = 1`` and ``dp_rank = 0``.

Spelling: sizes, coordinates and groups are attributes or properties; the predicates and
neighbours (``is_last_pp_rank()``, ``next_pp_rank()``, ``has_pp()``, ...) are methods, as in
TensorRT-LLM. Only ``world_size``, ``rank`` and ``gpus_per_node`` may be positional. A size
of -1 (the MoE and attention sizes) means "derive it", as there. trtsim adds ``dp_rank``,
``tp_cp_group``, ``world_group``, ``group(kind)`` and ``layout``.
"""

from __future__ import annotations

import enum
from dataclasses import KW_ONLY, dataclass, field, replace

from . import device_mesh
from .groups import GROUP_KINDS, all_groups, group_of, pp_layer_split

__all__ = ["CpType", "Mapping", "GROUP_KINDS", "pp_layer_split"]


class CpType(str, enum.Enum):
    """Context-parallel flavours; ``cp_config={"cp_type": "helix"}`` in any case works."""

    ULYSSES = "ULYSSES"
    STAR = "STAR"
    RING = "RING"
    HELIX = "HELIX"


def _int(name: str, value, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")


@dataclass(frozen=True, eq=False)
class Mapping:
    """The position of one rank in an instance laid out as tp x pp x cp (TRT-LLM's Mapping)."""

    world_size: int = 1
    rank: int = 0
    gpus_per_node: int = 8
    _: KW_ONLY
    cp_size: int = 1
    cp_config: dict = field(default_factory=dict)
    tp_size: int = 1
    pp_size: int = 1
    pp_partition: tuple[int, ...] | None = None
    moe_cluster_size: int = -1
    moe_tp_size: int = -1
    moe_ep_size: int = -1
    attn_tp_size: int = -1
    attn_cp_size: int = -1
    enable_attention_dp: bool = False
    enable_lm_head_tp_in_adp: bool = False

    def __post_init__(self) -> None:
        for name in ("world_size", "tp_size", "pp_size", "cp_size", "gpus_per_node"):
            _int(name, getattr(self, name), 1)
        tp, pp, cp = self.tp_size, self.pp_size, self.cp_size
        if tp * pp * cp != self.world_size:
            raise ValueError(f"tp*pp*cp={tp * pp * cp} (tp={tp}, pp={pp}, cp={cp}) but "
                             f"world_size={self.world_size}")
        if not isinstance(self.rank, int) or not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank={self.rank!r} out of range for world_size={self.world_size}")
        for name in ("enable_attention_dp", "enable_lm_head_tp_in_adp"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}={getattr(self, name)!r} must be a bool")
        if self.enable_lm_head_tp_in_adp and not self.enable_attention_dp:
            raise ValueError("enable_lm_head_tp_in_adp=True needs enable_attention_dp=True")
        config = dict(self.cp_config or {})
        if "cp_type" in config:
            try:
                config["cp_type"] = CpType(str(getattr(config["cp_type"], "value",
                                                       config["cp_type"])).upper())
            except ValueError:
                raise ValueError(f"cp_config cp_type={config['cp_type']!r}; expected one of "
                                 f"{', '.join(c.value for c in CpType)}") from None
        object.__setattr__(self, "cp_config", config)
        self._derive_moe_and_attention()
        if self.pp_partition is not None:
            part = tuple(self.pp_partition)
            if len(part) != pp or any(not isinstance(n, int) or n < 0 for n in part):
                raise ValueError(f"pp_partition={list(part)!r} must give one layer count "
                                 f"per PP stage ({pp})")
            object.__setattr__(self, "pp_partition", part)

    def _derive_moe_and_attention(self) -> None:
        """-1 sizes derived as TRT-LLM derives them (the MoE world is tp, or tp*cp when CP is
        not Ulysses; attention spans tp*cp)."""
        tp, cp = self.tp_size, self.cp_size
        ulysses = self.cp_config.get("cp_type", CpType.ULYSSES) == CpType.ULYSSES
        for name in ("moe_cluster_size", "moe_tp_size", "moe_ep_size", "attn_tp_size",
                     "attn_cp_size"):
            value = getattr(self, name)
            if value != -1:
                _int(name, value, 1)
        cluster = 1 if self.moe_cluster_size == -1 else self.moe_cluster_size
        moe_world = tp if ulysses else tp * cp
        moe_tp, moe_ep = self.moe_tp_size, self.moe_ep_size
        if moe_tp == -1 and moe_ep == -1:
            moe_tp, moe_ep = moe_world // cluster, 1
        elif moe_tp == -1:
            moe_tp = moe_world // (moe_ep * cluster)
        elif moe_ep == -1:
            moe_ep = moe_world // (moe_tp * cluster)
        if moe_tp * moe_ep * cluster != moe_world:
            raise ValueError(f"moe_tp_size*moe_ep_size*moe_cluster_size={moe_tp * moe_ep * cluster}"
                             f" but the MoE world is {moe_world}")
        attn_tp, attn_cp = self.attn_tp_size, self.attn_cp_size
        if attn_tp == -1 and attn_cp == -1:
            attn_tp, attn_cp = (tp * cp, 1) if ulysses else (tp, cp)
        elif attn_tp == -1:
            attn_tp = tp * cp // attn_cp
        elif attn_cp == -1:
            attn_cp = tp * cp // attn_tp
        if attn_tp * attn_cp != tp * cp:
            raise ValueError(f"attn_tp_size*attn_cp_size={attn_tp * attn_cp} but tp*cp={tp * cp}")
        for name, value in (("moe_cluster_size", cluster), ("moe_tp_size", moe_tp),
                            ("moe_ep_size", moe_ep), ("attn_tp_size", attn_tp),
                            ("attn_cp_size", attn_cp)):
            _int(name, value, 1)
            object.__setattr__(self, name, value)

    # -- identity (TRT-LLM: equal sizes and rank are equal mappings) ----------------------
    def _key(self) -> tuple:
        return (self.world_size, self.rank, self.gpus_per_node, self.cp_size, self.tp_size,
                self.pp_size, self.pp_partition, self.moe_tp_size, self.moe_ep_size,
                self.moe_cluster_size, self.attn_tp_size, self.attn_cp_size,
                tuple(sorted((k, str(v)) for k, v in self.cp_config.items())),
                self.enable_attention_dp)

    def __eq__(self, other) -> bool:
        return self._key() == other._key() if isinstance(other, Mapping) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def with_rank(self, rank: int) -> "Mapping":
        """The same layout seen from another rank."""
        return replace(self, rank=rank)

    @classmethod
    def from_dict(cls, mapping: dict) -> "Mapping":
        return cls(**mapping)

    def to_dict(self) -> dict:
        keys = ("world_size", "rank", "gpus_per_node", "cp_size", "tp_size", "pp_size",
                "moe_tp_size", "moe_cluster_size", "moe_ep_size", "attn_tp_size",
                "attn_cp_size", "cp_config", "enable_attention_dp", "enable_lm_head_tp_in_adp")
        return {k: getattr(self, k) for k in keys}

    # -- coordinates ---------------------------------------------------------------------
    cp_rank = property(lambda self: self.rank % self.cp_size)
    tp_rank = property(lambda self: (self.rank % (self.tp_size * self.cp_size)) // self.cp_size)
    pp_rank = property(lambda self: self.rank // (self.tp_size * self.cp_size))
    dp_size = property(lambda self: self.tp_size if self.enable_attention_dp else 1)
    dp_rank = property(lambda self: self.tp_rank if self.enable_attention_dp else 0)
    node_rank = property(lambda self: self.rank // self.gpus_per_node)
    local_rank = property(lambda self: self.rank % self.gpus_per_node)
    moe_tp_rank = property(lambda self: self.tp_rank // (self.moe_ep_size * self.moe_cluster_size))
    moe_cluster_rank = property(lambda self: self.tp_rank % self.moe_cluster_size)
    moe_ep_rank = property(lambda self: self.tp_rank % self.moe_ep_size)

    # -- groups (ranks of the instance, ascending) ---------------------------------------
    def group(self, kind: str) -> list[int]:
        """This rank's group of ``kind`` (one of GROUP_KINDS)."""
        return list(group_of(kind, self.rank, self.tp_size, self.pp_size, self.cp_size))

    tp_group = property(lambda self: self.group("tp"))
    pp_group = property(lambda self: self.group("pp"))
    cp_group = property(lambda self: self.group("cp"))
    tp_cp_group = property(lambda self: self.group("tp_cp"),
                           doc="All ranks of this rank's PP stage (TP x CP), as "
                           "tp_cp_allgather uses them.")
    world_group = property(lambda self: self.group("world"))

    def groups(self, kind: str) -> list[list[int]]:
        """Every group of ``kind`` in this layout, as ascending ranks."""
        return [list(g) for g in all_groups(kind, self.tp_size, self.pp_size, self.cp_size)]

    tp_groups = property(lambda self: self.groups("tp"))
    pp_groups = property(lambda self: self.groups("pp"))
    cp_groups = property(lambda self: self.groups("cp"))

    @property
    def moe_tp_group(self) -> list[int]:
        """TP ranks of this stage sharing this rank's (cluster, EP) position."""
        base, step = self.pp_rank * self.tp_size * self.cp_size, self.moe_cluster_size * self.moe_ep_size
        j = self.moe_cluster_rank * self.moe_ep_size + self.moe_ep_rank
        return [base + (j + k * step) * self.cp_size + self.cp_rank for k in range(self.moe_tp_size)]

    @property
    def moe_ep_group(self) -> list[int]:
        """The EP block of this rank's MoE TP and cluster position."""
        base = self.pp_rank * self.tp_size * self.cp_size
        start = self.moe_tp_rank * self.moe_cluster_size * self.moe_ep_size \
            + self.moe_cluster_rank * self.moe_ep_size
        return [base + (start + k) * self.cp_size + self.cp_rank for k in range(self.moe_ep_size)]

    @property
    def moe_cluster_group(self) -> list[int]:
        base = self.pp_rank * self.tp_size * self.cp_size
        start = self.moe_tp_rank * self.moe_cluster_size * self.moe_ep_size
        return [base + (start + k) * self.cp_size + self.cp_rank
                for k in range(self.moe_cluster_size * self.moe_ep_size)]

    # -- predicates and neighbours (methods, as in TRT-LLM) ------------------------------
    def has_tp(self) -> bool:
        return self.tp_size > 1

    def has_pp(self) -> bool:
        return self.pp_size > 1

    def has_cp(self) -> bool:
        return self.cp_size > 1

    def has_cp_ulysses(self) -> bool:
        return self.cp_size > 1 and self.cp_config.get("cp_type") == CpType.ULYSSES

    def has_cp_helix(self) -> bool:
        return self.cp_size > 1 and self.cp_config.get("cp_type") == CpType.HELIX

    def has_moe_tp(self) -> bool:
        return self.moe_tp_size > 1

    def has_moe_ep(self) -> bool:
        return self.moe_ep_size > 1

    def has_moe_cluster(self) -> bool:
        return self.moe_cluster_size > 1

    def is_first_pp_rank(self) -> bool:
        return self.pp_rank == 0

    def is_last_pp_rank(self) -> bool:
        return self.pp_rank == self.pp_size - 1

    def is_second_last_pp_rank(self) -> bool:
        return self.pp_rank == self.pp_size - 2

    def next_pp_rank(self) -> int:
        return (self.rank + self.tp_size * self.cp_size) % self.world_size

    def prev_pp_rank(self) -> int:
        return (self.rank - self.tp_size * self.cp_size) % self.world_size

    def is_first_cp_rank(self) -> bool:
        return self.cp_rank == 0

    def is_last_cp_rank(self) -> bool:
        return self.cp_rank == self.cp_size - 1

    def next_cp_rank(self) -> int:
        return self.rank - self.cp_rank + (self.cp_rank + 1) % self.cp_size

    def prev_cp_rank(self) -> int:
        return self.rank - self.cp_rank + (self.cp_rank - 1) % self.cp_size

    def get_node_rank(self, rank: int) -> int:
        return rank // self.gpus_per_node

    def get_local_rank(self, rank: int) -> int:
        return rank % self.gpus_per_node

    def is_multi_node(self) -> bool:
        return self.world_size > self.gpus_per_node

    # -- layers and experts --------------------------------------------------------------
    def pp_layers(self, num_layers: int) -> list[int]:
        """This stage's layer indices: ``pp_partition``'s counts if given, else the split of
        ``torch.tensor_split`` (the first ``num_layers % pp`` stages get one extra layer)."""
        if self.pp_partition is None:
            return pp_layer_split(num_layers, self.pp_size)[self.pp_rank]
        if sum(self.pp_partition) != num_layers:
            raise ValueError(f"pp_partition={list(self.pp_partition)} sums to "
                             f"{sum(self.pp_partition)}, not num_layers={num_layers}")
        start = sum(self.pp_partition[:self.pp_rank])
        return list(range(start, start + self.pp_partition[self.pp_rank]))

    def pp_rank_of_layer(self, layer_idx: int, num_layers: int) -> int:
        """The PP stage holding layer ``layer_idx``."""
        if not 0 <= layer_idx < num_layers:
            raise ValueError(f"layer_idx={layer_idx} out of range for num_layers={num_layers}")
        for stage in range(self.pp_size):
            if layer_idx in self.with_rank(stage * self.tp_size * self.cp_size).pp_layers(num_layers):
                return stage
        return 0

    def ep_experts(self, num_experts: int) -> list[int]:
        """This rank's contiguous slice of the experts."""
        per = num_experts // self.moe_ep_size
        return list(range(self.moe_ep_rank * per, (self.moe_ep_rank + 1) * per))

    # -- TensorRT-LLM's device mesh (``device_mesh``: the mesh is run-time state, kept aside) --
    def build_mesh(self) -> None:
        """The torch DeviceMesh of this layout, as TensorRT-LLM's ``TorchDist`` builds it
        (inside a launched rank, with torch.distributed initialised)."""
        device_mesh.build_mesh(self)

    tp_group_pg = property(lambda self: device_mesh.group_pg(self, "tp"))
    pp_group_pg = property(lambda self: device_mesh.group_pg(self, "pp"))
    cp_group_pg = property(lambda self: device_mesh.group_pg(self, "cp"))
    moe_tp_group_pg = property(lambda self: device_mesh.group_pg(self, "moe_tp"))
    moe_ep_group_pg = property(lambda self: device_mesh.group_pg(self, "moe_ep"))

    def __getstate__(self) -> dict:
        # a built mesh belongs to the process that built it; it never travels
        return {k: v for k, v in self.__dict__.items() if k != device_mesh._ATTR}

    def repurpose_helix_cp_to_tp(self) -> "Mapping":
        """The same ranks with helix CP folded into TP (cp=1, tp=tp*cp)."""
        if not self.has_cp_helix():
            raise ValueError("repurpose_helix_cp_to_tp needs cp_size > 1 with cp_type HELIX")
        return replace(self, tp_size=self.tp_size * self.cp_size, cp_size=1, cp_config={},
                       attn_tp_size=-1, attn_cp_size=-1, moe_tp_size=-1, moe_ep_size=-1,
                       moe_cluster_size=-1)
