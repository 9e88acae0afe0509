"""TRT-LLM's single-process KV transfer test as a rank program, and its bit-exact check.

Every rank of both instances runs ``transfer_program``: build the KV cache, the transceiver
(its init collectives), take the requests it handles (attention DP: request i on DP rank
i % tp, every PP stage of it), generation first opens receive sessions, the context side
writes the prefill's KV and opens send sessions, then each side checks its transfer status
once, blocking. Each rank returns its blocks; ``verify_transfer`` re-assembles heads across TP
and layers across PP on both sides and compares them bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..comm.distributed import Distributed
from ..disagg.transceiver import KvCacheTransceiverV2
from ..disagg.transceiver_config import DisaggPeers, TransceiverConfig
from ..disagg.transfer_plan import dp_owner, holders
from ..state.fault import Fault
from ..state.kv_cache import KvCacheConfig, KVCacheManager
from ..state.request import LlmRequest


@dataclass(frozen=True)
class TransferJob:
    """Everything a rank needs to run the transfer test."""

    peers: DisaggPeers
    kv: KvCacheConfig
    requests: tuple[int, ...]                      # prompt lengths
    transceiver: TransceiverConfig = TransceiverConfig()
    seed: int = 0
    faults: dict[int, Fault] = field(default_factory=dict)   # request index -> fault
    dp_offset: int = 0

    def request(self, i: int) -> LlmRequest:
        return LlmRequest(
            request_id=i, prompt_len=self.requests[i],
            ctx_dp_rank=dp_owner(self.peers.ctx, i, self.dp_offset),
            gen_dp_rank=dp_owner(self.peers.gen, i, self.dp_offset), fault=self.faults.get(i))


@dataclass(frozen=True)
class TransferReport:
    """One rank of the transfer test: its blocks and the outcomes it saw."""

    role: str
    rank: int
    heads: tuple[int, ...]
    layers: tuple[int, ...]
    blocks: dict[tuple[int, int], torch.Tensor]     # (request id, layer) -> HND blocks
    completed: list[int]
    failed: list[int]
    cancelled: list[int]
    skipped_checks: int
    bytes: int
    states: dict[int, str]                          # request id -> LlmRequestState value


def transfer_program(dist: Distributed, job: TransferJob) -> TransferReport:
    """One rank of the transfer test; returns its blocks and outcomes for verification."""
    is_ctx = dist.role == "ctx"
    spec = job.peers.ctx if is_ctx else job.peers.gen
    kv = KVCacheManager(job.kv, dist.mapping, spec.enable_attention_dp)
    tc = KvCacheTransceiverV2(dist, kv, job.peers, job.transceiver)
    mine = []
    for i in range(len(job.requests)):
        req = job.request(i)
        if dist.rank in holders(spec, req.ctx_dp_rank if is_ctx else req.gen_dp_rank):
            mine.append(req)
    for req in mine:
        kv.add_sequence(req.request_id, req.prompt_len)
        if is_ctx:
            kv.write_prefill(req.request_id, job.seed)
            tc.respond_and_send_async(req)
        else:
            tc.request_and_receive_async(req)
    if is_ctx:
        completed, failed = tc.check_context_transfer_status(None, mark_complete=True)
        cancelled = []
    else:
        completed, failed, cancelled_reqs = tc.check_gen_transfer_status(None)
        cancelled = [r.request_id for r in cancelled_reqs]
    return TransferReport(
        dist.role, dist.rank, tuple(kv.heads), tuple(kv.layers),
        {(r.request_id, layer): kv.read(r.request_id, layer, kv.heads)
         for r in mine for layer in kv.layers},
        sorted(completed), sorted(failed), sorted(cancelled), tc.num_skipped_checks,
        tc.num_bytes, {r.request_id: r.state.value for r in mine})


def _assemble(results: list[TransferReport], request_id: int, layer: int) -> torch.Tensor | None:
    """One layer of one request, all heads: [blocks, kvf, heads, tpb, dim] (HND), from the
    ranks of one instance (replicated heads must agree bit for bit)."""
    by_heads: dict[tuple[int, int], torch.Tensor] = {}
    for res in results:
        block = res.blocks.get((request_id, layer))
        if block is None:
            continue
        prev = by_heads.setdefault(res.heads, block)
        if not torch.equal(prev, block):
            raise AssertionError(f"request {request_id} layer {layer}: replicas of heads "
                                 f"{list(res.heads)} differ")
    if not by_heads:
        return None
    return torch.cat([by_heads[h] for h in sorted(by_heads)], dim=2)


def completed_everywhere(results: list[TransferReport]) -> set[int]:
    """Requests every holding rank of an instance reports complete."""
    states: dict[int, set[str]] = {}
    for res in results:
        for rid, state in res.states.items():
            states.setdefault(rid, set()).add(state)
    return {rid for rid, s in states.items()
            if s <= {"disagg_generation_trans_complete", "disagg_context_complete"}}


def verify_transfer(job: TransferJob, ctx_results: list[TransferReport],
                    gen_results: list[TransferReport]):
    """(verified, problems): every request completed on every holder (unless a fault was
    injected into it), and its blocks are equal on both sides, bit for bit."""
    problems = []
    done = completed_everywhere(gen_results)
    for rid in range(len(job.requests)):
        if rid not in done:
            if rid not in job.faults:
                problems.append(f"request {rid}: the transfer did not complete on every "
                                "generation rank")
            continue
        for layer in range(job.kv.num_layers):
            ctx_full = _assemble(ctx_results, rid, layer)
            gen_full = _assemble(gen_results, rid, layer)
            if ctx_full is None or gen_full is None:
                problems.append(f"request {rid} layer {layer}: missing on "
                                f"{'ctx' if ctx_full is None else 'gen'}")
            elif ctx_full.shape != gen_full.shape:
                problems.append(f"request {rid} layer {layer}: shape ctx {tuple(ctx_full.shape)} "
                                f"gen {tuple(gen_full.shape)}")
            elif not torch.equal(ctx_full, gen_full):
                bad = (ctx_full != gen_full).nonzero()[0].tolist()
                problems.append(f"request {rid} layer {layer}: data differs at {bad}")
    return not problems, problems
