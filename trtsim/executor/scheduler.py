"""The capacity scheduler: which requests run this iteration, which are admitted (pure-ish:
reads the KV cache's free blocks, changes nothing)."""

from __future__ import annotations

from typing import Iterable

from ..state.kv_cache import KVCacheManager
from ..state.request import LlmRequest, LlmRequestState as S
from .config import ExecutorConfig

_IN_FLIGHT = (S.DISAGG_GENERATION_TRANS_IN_PROGRESS, S.DISAGG_GENERATION_TRANS_COMPLETE,
              S.GENERATION_IN_PROGRESS)


def free_blocks(active: Iterable[LlmRequest], kv: KVCacheManager) -> int:
    """Blocks free once every admitted request's whole sequence is reserved."""
    return kv.num_free_blocks - sum(
        kv.blocks_needed(r.prompt_len + r.max_new_tokens) - kv.blocks_needed(r.seq_len)
        for r in active if r.state in _IN_FLIGHT)


def fits(req: LlmRequest, free: int, kv: KVCacheManager) -> bool:
    """Whether a waiting generation request's whole sequence fits in ``free`` blocks."""
    return kv.blocks_needed(req.prompt_len + req.max_new_tokens) <= free


def schedule(active: Iterable[LlmRequest], kv: KVCacheManager, config: ExecutorConfig,
             role: str, busy: set[int] = frozenset()) -> tuple[list[LlmRequest], list[LlmRequest]]:
    """(batch to forward, generation requests to admit) under max_batch_size, max_num_tokens
    and the KV blocks each request may still need (no eviction: a request is admitted only if
    its whole sequence fits). ``busy`` requests are in a PP micro-batch already in flight."""
    reqs = sorted(active, key=lambda r: (r.arrival_iter, r.request_id))
    free = free_blocks(reqs, kv)
    batch, tokens = [], 0
    if role == "ctx":
        for r in reqs:
            if r.state != S.CONTEXT_INIT or r.request_id in busy:
                continue
            need = kv.blocks_needed(r.prompt_len)
            if len(batch) >= config.max_batch_size or tokens + r.prompt_len > config.max_num_tokens \
                    or need > free:
                break
            batch.append(r)
            tokens += r.prompt_len
            free -= need
        return batch, []
    for r in reqs:
        if r.state == S.GENERATION_IN_PROGRESS and r.request_id not in busy \
                and len(batch) < config.max_batch_size:
            batch.append(r)
    in_flight = sum(r.state in _IN_FLIGHT for r in reqs)
    admit = []
    for r in reqs:
        if r.state != S.DISAGG_GENERATION_INIT:
            continue
        if in_flight >= config.max_batch_size or not fits(r, free, kv):
            break
        admit.append(r)
        in_flight += 1
        free -= kv.blocks_needed(r.prompt_len + r.max_new_tokens)
    return batch, admit
