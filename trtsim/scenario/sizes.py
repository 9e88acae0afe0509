"""Checks that need the model's sizes, made when a scenario is read, before any rank starts.

Without them these inputs fail inside the ranks, as a "failed" verdict CI cannot tell from a
real violation, or allocate without bound until the timeout: KV heads that do not split over
an instance's TP ranks, a request longer than the model's ``max_seq_len``, the requests of a
transfer that cannot all be held at once, KV-cache pools larger than a machine. Each is a
``ScenarioError`` naming the file, the key and the value.
"""

from __future__ import annotations

from dataclasses import fields

from ..checks import MAX_KV_POOL_BYTES
from ..disagg.transfer_plan import dp_owner
from ..executor.config import ServingWorkload
from ..layout.topology import InstanceSpec
from ..state.kv_cache import DTYPES, KvCacheConfig, head_range
from .schema import err


def check_sizes(scenario) -> None:
    """Raise the first size problem of a resolved functional ``Scenario``."""
    src, kv, dep = scenario.source, scenario.kv, scenario.deployment
    instances = (("ctx", dep.ctx), ("gen", dep.gen))
    for role, inst in instances:
        try:
            head_range(kv.heads, inst.tp_size, 0, inst.enable_attention_dp or kv.is_mla)
        except ValueError as exc:
            raise err(src, "model.num_kv_heads", kv.num_kv_heads,
                      f"does not split over the {role} instance's tp={inst.tp_size} "
                      f"ranks: {exc}") from None
    workload = scenario.workload
    if isinstance(workload, ServingWorkload):
        blocks = ("executor.kv_blocks", scenario.executor.kv_blocks)
        _check_serving(src, workload, kv)
    else:
        blocks = ("model.blocks", kv.blocks_per_layer)        # fixed for a transfer
        _check_transfer(src, workload, kv, instances)
    _check_pools(src, kv, blocks, instances)


def _longest(value) -> int:
    return value if isinstance(value, int) else max(value)


def _check_serving(src: str, w: ServingWorkload, kv: KvCacheConfig) -> None:
    longest = _longest(w.input_len) + _longest(w.output_len)
    if longest > kv.max_seq_len:
        raise err(src, "workload.input_len", w.input_len,
                  f"with output_len {w.output_len!r} makes requests of up to {longest} tokens, "
                  f"longer than model.max_seq_len={kv.max_seq_len}")


def _check_transfer(src: str, w, kv: KvCacheConfig, instances) -> None:
    """Every prompt within max_seq_len; every rank able to hold the requests it is given
    (a transfer holds all of them at once: one per DP rank under attention DP)."""
    for n in w.requests:
        if n > kv.max_seq_len:
            raise err(src, "workload.requests", n,
                      f"is longer than model.max_seq_len={kv.max_seq_len}")
    for role, inst in instances:
        held = [0] * inst.dp_size
        for i, n in enumerate(w.requests):
            held[dp_owner(inst, i, w.dp_offset)] += kv.num_blocks(n)
        busiest = max(range(inst.dp_size), key=held.__getitem__)
        if held[busiest] > kv.blocks_per_layer:
            raise err(src, "workload.requests", list(w.requests),
                      f"need {held[busiest]} KV blocks per layer on a {role} rank (DP rank "
                      f"{busiest}), more than its pool of {kv.blocks_per_layer} blocks of "
                      f"model.tokens_per_block={kv.tokens_per_block} tokens")


def _check_pools(src: str, kv: KvCacheConfig, blocks: tuple[str, int], instances) -> None:
    """The KV-cache pools of every rank together (an inproc run holds all of them); the
    error names the key furthest above its default."""
    total = sum(inst.world_size * _pool_bytes(kv, blocks[1], inst) for _, inst in instances)
    if total <= MAX_KV_POOL_BYTES:
        return
    default = {f.name: f.default for f in fields(KvCacheConfig)}
    factors = [("model.head_dim", kv.head_dim, default["head_dim"]),
               ("model.tokens_per_block", kv.tokens_per_block, default["tokens_per_block"]),
               ("model.num_kv_heads", kv.num_kv_heads, default["num_kv_heads"]),
               ("deployment.num_layers", kv.num_layers, default["num_layers"]),
               (*blocks, default["blocks_per_layer"])]
    key, value, _ = max(factors, key=lambda f: f[1] / f[2])
    raise err(src, key, value,
              f"makes KV-cache pools of {total:.3g} bytes in all (num_kv_heads "
              f"{kv.num_kv_heads}, head_dim {kv.head_dim}, tokens_per_block "
              f"{kv.tokens_per_block}, {blocks[1]} blocks, {kv.num_layers} layers), more than "
              f"the limit of {MAX_KV_POOL_BYTES:,} bytes")


def _pool_bytes(kv: KvCacheConfig, blocks: int, inst: InstanceSpec) -> int:
    """One rank's pools: its stage's layers (the first stages get the extra ones) of
    ``blocks`` blocks of its KV heads."""
    layers = -(-kv.num_layers // inst.pp_size)
    start, stop = head_range(kv.heads, inst.tp_size, 0, inst.enable_attention_dp or kv.is_mla)
    element = DTYPES[kv.dtype].itemsize
    return layers * blocks * kv.kv_factor * (stop - start) * kv.tokens_per_block * \
        kv.head_dim * element
