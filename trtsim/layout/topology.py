"""Deployments of a context and a generation instance: TRT-LLM's single-process transceiver
test topologies (DESIGN 3.2), by id, in the order of the table."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks import MAX_RANKS, require_at_most
from .parallel import ParallelLayout


@dataclass(frozen=True)
class InstanceSpec(ParallelLayout):
    """One serving instance: its parallel layout and the model facts that shape its KV cache."""

    # Set from the deployment's keys (mla, num_layers), not per instance.
    is_mla: bool = field(default=False, metadata={"internal": True})
    num_layers: int = field(default=4, metadata={"internal": True})

    def __post_init__(self) -> None:
        super().__post_init__()
        # num_layers must give every PP stage a layer.
        if self.num_layers < self.pp_size:
            raise ValueError(f"num_layers={self.num_layers} < pp_size={self.pp_size}: "
                             "a PP stage would hold no layer")

    def describe(self) -> str:
        parts = [f"tp{self.tp_size}", f"pp{self.pp_size}"]
        if self.cp_size > 1:
            parts.append(f"cp{self.cp_size}")
        if self.enable_attention_dp:
            parts.append("adp")
        if self.is_mla:
            parts.append("mla")
        return " ".join(parts)


@dataclass(frozen=True)
class Deployment:
    """A context instance and a generation instance that exchange KV cache."""

    id: str
    ctx: InstanceSpec
    gen: InstanceSpec

    def __post_init__(self) -> None:
        require_at_most("ranks", self.world_size, MAX_RANKS, "ranks (ctx and gen together)")

    @property
    def world_size(self) -> int:
        return self.ctx.world_size + self.gen.world_size


# (ctx_tp, ctx_pp, gen_tp, gen_pp, ctx_adp, gen_adp, mla[, layers]) -- DESIGN 3.2, in order.
_T, _F = True, False
_TABLE: tuple[tuple, ...] = (
    ("tp1_pp1", 1, 1, 1, 1, _F, _F, _F), ("tp2_pp1", 2, 1, 2, 1, _F, _F, _F),
    ("tp1_pp2", 1, 2, 1, 2, _F, _F, _F), ("tp2_pp2", 2, 2, 2, 2, _F, _F, _F),
    ("tp4_pp1", 4, 1, 4, 1, _F, _F, _F), ("tp1_pp4", 1, 4, 1, 4, _F, _F, _F),
    ("tp4_pp2", 4, 2, 4, 2, _F, _F, _F), ("tp2_pp4", 2, 4, 2, 4, _F, _F, _F),
    ("tp4_pp4", 4, 4, 4, 4, _F, _F, _F), ("pp2_to_pp1", 1, 2, 1, 1, _F, _F, _F),
    ("tp2_to_pp2", 2, 1, 1, 2, _F, _F, _F), ("tp4_to_tp2pp2", 4, 1, 2, 2, _F, _F, _F),
    ("tp4_to_pp4", 4, 1, 1, 4, _F, _F, _F), ("tp2pp2_to_tp4", 2, 2, 4, 1, _F, _F, _F),
    ("pp4_to_tp4", 1, 4, 4, 1, _F, _F, _F), ("tp4pp2_to_tp2pp4", 4, 2, 2, 4, _F, _F, _F),
    ("tp2_dp_both", 2, 1, 2, 1, _T, _T, _F), ("tp4_dp_both", 4, 1, 4, 1, _T, _T, _F),
    ("ctx_dp_gen_pp2", 2, 1, 1, 2, _T, _F, _F), ("tp4_dp_to_tp2pp2", 4, 1, 2, 2, _T, _F, _F),
    ("tp2_pp2_dp_both", 2, 2, 2, 2, _T, _T, _F), ("tp4_pp2_dp_both", 4, 2, 4, 2, _T, _T, _F),
    ("mla_tp1_pp1", 1, 1, 1, 1, _F, _F, _T), ("mla_tp2", 2, 1, 2, 1, _F, _F, _T),
    ("mla_tp4", 4, 1, 4, 1, _F, _F, _T), ("mla_tp2_pp2", 2, 2, 2, 2, _F, _F, _T),
    ("mla_tp4_pp2", 4, 2, 4, 2, _F, _F, _T), ("mla_tp2_ctx_dp", 2, 1, 2, 1, _T, _F, _T),
    ("mla_tp4_dp_both", 4, 1, 4, 1, _T, _T, _T), ("mla_tp2_to_pp2", 2, 1, 1, 2, _F, _F, _T),
    ("mla_ctx_dp4_gen_tp8", 4, 1, 8, 1, _T, _F, _T),
    ("mla_ctx_tp4_gen_tp8", 4, 1, 8, 1, _F, _F, _T),
    ("5L_tp1_pp2", 1, 2, 1, 2, _F, _F, _F, 5), ("5L_tp2_pp2", 2, 2, 2, 2, _F, _F, _F, 5),
    ("5L_tp1_pp3", 1, 3, 1, 3, _F, _F, _F, 5), ("7L_tp1_pp2", 1, 2, 1, 2, _F, _F, _F, 7),
    ("7L_tp2_pp2", 2, 2, 2, 2, _F, _F, _F, 7), ("7L_tp1_pp3", 1, 3, 1, 3, _F, _F, _F, 7),
    ("7L_tp1_pp4", 1, 4, 1, 4, _F, _F, _F, 7), ("5L_tp2_to_pp2", 2, 1, 1, 2, _F, _F, _F, 5),
    ("5L_pp2_to_tp2", 1, 2, 2, 1, _F, _F, _F, 5), ("7L_tp4_to_pp4", 4, 1, 1, 4, _F, _F, _F, 7),
    ("7L_pp4_to_tp4", 1, 4, 4, 1, _F, _F, _F, 7),
    ("7L_tp2pp2_to_pp4", 2, 2, 1, 4, _F, _F, _F, 7),
    ("5L_mla_tp1_pp2", 1, 2, 1, 2, _F, _F, _T, 5), ("5L_mla_tp2_pp2", 2, 2, 2, 2, _F, _F, _T, 5),
    ("7L_mla_tp1_pp3", 1, 3, 1, 3, _F, _F, _T, 7),
)


def _deployment(row: tuple) -> Deployment:
    tid, ctx_tp, ctx_pp, gen_tp, gen_pp, ctx_adp, gen_adp, mla, *rest = row
    layers = rest[0] if rest else 4
    return Deployment(
        id=tid,
        ctx=InstanceSpec(tp_size=ctx_tp, pp_size=ctx_pp, enable_attention_dp=ctx_adp,
                         is_mla=mla, num_layers=layers),
        gen=InstanceSpec(tp_size=gen_tp, pp_size=gen_pp, enable_attention_dp=gen_adp,
                         is_mla=mla, num_layers=layers),
    )


_BY_ID = {row[0]: row for row in _TABLE}


def topologies() -> list[str]:
    """Every topology id of DESIGN 3.2, in the order of the table."""
    return [row[0] for row in _TABLE]


def topology(topology_id: str) -> Deployment:
    """The deployment named ``topology_id``; ``ValueError`` listing the known ids if unknown."""
    row = _BY_ID.get(topology_id)
    if row is None:
        raise ValueError(f"unknown topology {topology_id!r}; known: {', '.join(topologies())}")
    return _deployment(row)


def format_table(ids: list[str] | None = None) -> str:
    """The topologies as a fixed-width table (what ``trtsim topologies`` prints)."""
    head = ("id", "ctx", "gen", "ranks", "layers")
    rows = []
    for tid in ids or topologies():
        dep = topology(tid)
        rows.append((tid, dep.ctx.describe(), dep.gen.describe(),
                     f"{dep.ctx.world_size}+{dep.gen.world_size}", str(dep.ctx.num_layers)))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
