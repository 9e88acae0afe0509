"""Which context rank sends which KV blocks to which generation rank (pure functions).

A context rank holds the layers of its PP stage and the heads of its TP rank (all heads under
attention DP; MLA's one latent head on every TP rank). A generation rank needs the layers of
its own stage and heads of its own TP rank. For each (layer, head) a generation rank needs,
the source is a context rank of the owning DP rank whose stage holds the layer and whose heads
hold the head; among replicas (MLA, tp > heads) the generation TP rank picks one round-robin,
so replicas share the load. Pieces group the result by (context rank, generation rank).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..layout.parallel import pp_layer_split
from ..layout.topology import InstanceSpec
from ..state.kv_cache import KvCacheConfig, head_range


@dataclass(frozen=True)
class Piece:
    """What one context rank sends one generation rank for one request."""

    ctx_rank: int
    gen_rank: int
    layers: tuple[int, ...]
    heads: tuple[int, int]        # global KV heads [start, stop)


def dp_owner(spec: InstanceSpec, request_index: int, offset: int = 0) -> int:
    """The DP rank the disaggregated router gives request i: (i + offset) % tp under
    attention DP (DESIGN 3.2 uses offset 0), 0 without it."""
    return (request_index + offset) % spec.tp_size if spec.enable_attention_dp else 0


def holders(spec: InstanceSpec, dp_rank: int) -> list[int]:
    """Ranks of an instance that hold a request owned by ``dp_rank`` (every PP stage)."""
    ranks = range(spec.world_size)
    if not spec.enable_attention_dp:
        return list(ranks)
    return [r for r in ranks if spec.mapping(r).tp_rank == dp_rank]


def rank_heads(spec: InstanceSpec, rank: int, kv: KvCacheConfig) -> tuple[int, int]:
    m = spec.mapping(rank)
    return head_range(kv.heads, m.tp_size, m.tp_rank, spec.enable_attention_dp or kv.is_mla)


def plan_request(ctx: InstanceSpec, gen: InstanceSpec, kv: KvCacheConfig, ctx_dp: int,
                 gen_dp: int) -> list[Piece]:
    """Every piece of one request's transfer, sorted by (ctx rank, gen rank)."""
    ctx_layers = pp_layer_split(kv.num_layers, ctx.pp_size)
    stage_of = {layer: s for s, ls in enumerate(ctx_layers) for layer in ls}
    sources = holders(ctx, ctx_dp)
    pieces: dict[tuple[int, int], tuple[list[int], set[int]]] = {}
    for g in holders(gen, gen_dp):
        gm = gen.mapping(g)
        g_heads = rank_heads(gen, g, kv)
        for layer in pp_layer_split(kv.num_layers, gen.pp_size)[gm.pp_rank]:
            stage = [c for c in sources if ctx.mapping(c).pp_rank == stage_of[layer]]
            for h in range(*g_heads):
                owners = [c for c in stage if rank_heads(ctx, c, kv)[0] <= h < rank_heads(ctx, c, kv)[1]]
                c = owners[gm.tp_rank % len(owners)]
                layers, heads = pieces.setdefault((c, g), ([], set()))
                if layer not in layers:
                    layers.append(layer)
                heads.add(h)
    out = []
    for (c, g), (layers, heads) in sorted(pieces.items()):
        lo, hi = min(heads), max(heads) + 1
        assert hi - lo == len(heads), "a piece's heads are contiguous by construction"
        out.append(Piece(c, g, tuple(sorted(layers)), (lo, hi)))
    return out


def piece_numel(piece: Piece, kv: KvCacheConfig, length: int) -> int:
    """Elements of the flat message carrying a piece (its layers' valid blocks, concatenated)."""
    per_block = kv.kv_factor * (piece.heads[1] - piece.heads[0]) * kv.tokens_per_block * kv.head_dim
    return sum(kv.valid_blocks(layer, length) for layer in piece.layers) * per_block
