"""A context and a generation instance serving a workload side by side (one rank program)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..comm.distributed import Distributed
from ..disagg.transceiver import KvCacheTransceiverV2
from ..disagg.transceiver_config import DisaggPeers, TransceiverConfig
from ..disagg.transfer_plan import dp_owner
from ..executor.config import ExecutorConfig, ServingWorkload
from ..executor.py_executor import PyExecutor
from ..state.fault import Fault
from ..state.kv_cache import KvCacheConfig, KVCacheManager
from ..state.request import LlmRequest


@dataclass(frozen=True)
class ServingJob:
    """Everything a rank needs to run its instance's executor on the workload."""

    peers: DisaggPeers
    kv: KvCacheConfig
    workload: ServingWorkload
    executor: ExecutorConfig = ExecutorConfig()
    transceiver: TransceiverConfig = TransceiverConfig()
    seed: int = 0
    faults: dict[int, Fault] = field(default_factory=dict)
    speculative: object | None = None      # trtsim.spec config; None: one token per step

    def requests(self) -> list[LlmRequest]:
        """Fresh request objects, as the disaggregated server hands them to both instances:
        request i arrives at iteration i * interval, its DP owners chosen as i % tp."""
        ctx, gen, off = self.peers.ctx, self.peers.gen, self.workload.dp_offset
        out = []
        for i, (inp, outp) in enumerate(self.workload.lengths()):
            out.append(LlmRequest(
                request_id=i, prompt_len=inp, max_new_tokens=outp,
                ctx_dp_rank=dp_owner(ctx, i, off), gen_dp_rank=dp_owner(gen, i, off),
                arrival_iter=i * self.workload.arrival_interval, fault=self.faults.get(i)))
        return out


def serving_program(dist: Distributed, job: ServingJob) -> dict:
    """One rank: build the KV cache, the transceiver and the executor, then run the loop."""
    spec = job.peers.ctx if dist.role == "ctx" else job.peers.gen
    kv = KVCacheManager(replace(job.kv, blocks_per_layer=job.executor.kv_blocks), dist.mapping,
                        spec.enable_attention_dp)
    tc = KvCacheTransceiverV2(dist, kv, job.peers, job.transceiver)
    sampler = None
    if job.speculative is not None and dist.role == "gen":
        from ..spec.generation_step import GenerationStep
        sampler = GenerationStep(job.speculative, dist, seed=job.seed)
    ex = PyExecutor(dist, kv, tc, job.executor, job.requests(), sampler=sampler, seed=job.seed)
    return ex.run()
