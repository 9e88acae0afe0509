"""KvCacheTransceiverV2: TRT-LLM's Python KV-cache transceiver, one per rank (DESIGN 3.4).

Sync policy, for an instance of tp x pp with or without attention DP:
    ctx_need_tp_sync = tp > 1 and not adp
    ctx_need_pp_sync = pp > 1
    gen_need_sync    = not (world == 1 or (adp and pp == 1))
and the generation-side gather is ``pp_allgather`` under attention DP, else the instance-wide
``allgather``. Context consensus gathers over TP first, then PP; generation consensus is one
gather. Outcome consensus combines cancelled/failed by union and completed by intersection.

The sticky-role short-circuit: ``ever_had_send_session`` / ``ever_had_recv_session`` flip when
the first session opens and never reset; a transceiver that never opened one may return early
and skip the consensus gathers. The variants (``sticky_skip``): ``off`` never skips;
``conservative`` skips only when no sync is needed at all; ``unguarded`` skips whenever no
session ever opened; ``guarded`` skips only when pp == 1 (the fix of incident 5.3). Under
attention DP the DP ranks hold different requests, so their markers flip at different times:
a skip is legal only if every member of every group it would have used skips with it.

``version`` follows one of TensorRT-LLM's stored KvCacheTransceiverV2 versions where they
differ in which gathers run (docs/PERF_MODEL.md, "The call pattern"): A has no skip and three
outcome gathers; B adds the markers, three outcome gathers; C and E gather the outcome once
(packed lists) and skip ``prepare_context_requests``'s gather when no request waits. In every
version the receive side skips only where no sync is needed (B, C, E) or never (A); the send
side follows ``sticky_skip``. ``trtsim`` applies ``sticky_skip`` to both sides and ``outcome``
as set.
"""

from __future__ import annotations

from ..comm.distributed import Distributed
from ..layout.topology import InstanceSpec
from ..state.kv_cache import KVCacheManager
from ..state.request import LlmRequest, LlmRequestState
from .consensus import combine_outcomes, find_consensus_request_ids
from .ring_consensus import RingConsensus
from .sessions import RxSession, SessionStatus, TxSession, WaitResult
from .transceiver_config import DisaggPeers, TransceiverConfig
from .transfer_plan import holders, plan_request

_OUTCOME = {SessionStatus.COMPLETED: "completed", SessionStatus.FAILED: "failed",
            SessionStatus.CANCELLED: "cancelled"}


class KvCacheTransceiverV2:
    """One rank's transceiver: sessions, consensus, the sticky short-circuit."""

    def __init__(self, dist: Distributed, kv: KVCacheManager, peers: DisaggPeers,
                 config: TransceiverConfig):
        self.dist, self.kv, self.peers, self.config = dist, kv, peers, config
        m = dist.mapping
        self.mapping = m
        self.ctx_need_tp_sync = m.tp_size > 1 and not m.enable_attention_dp
        self.ctx_need_pp_sync = m.pp_size > 1
        self.gen_need_sync = not (m.world_size == 1 or (m.enable_attention_dp and m.pp_size == 1))
        self._gen_allgather = dist.pp_allgather if m.enable_attention_dp else dist.allgather
        self.ever_had_send_session = False
        self.ever_had_recv_session = False
        self.send_sessions: dict[int, TxSession] = {}
        self.recv_sessions: dict[int, RxSession] = {}
        self.send_reqs: dict[int, LlmRequest] = {}
        self.recv_reqs: dict[int, LlmRequest] = {}
        self.num_bytes = 0
        self.num_skipped_checks = 0
        # Asynchronous consensus (context TP1/PP>1): a ballot round the ring replaces the
        # blocking pp_allgathers of the context side.
        self._ring = RingConsensus(dist) if (
            config.async_consensus and dist.role == "ctx" and self.ctx_need_pp_sync
            and not self.ctx_need_tp_sync) else None
        # Instance init: every rank learns the instance name and the others' endpoints.
        self.instance_name = dist.broadcast(f"{dist.instance}-{id(self)}" if dist.rank == 0 else None,
                                            root=0, label="instance_name")
        self.endpoints = dist.allgather(f"{dist.instance}:{dist.rank}", label="rank_info")
        self.layer_num_per_pp = dist.pp_allgather(len(kv.layers), label="layer_num_per_pp")

    # -- the short-circuit ---------------------------------------------------------------
    def _may_skip(self, ever_had: bool, need_sync: bool, side: str) -> bool:
        variant = self.config.sticky_for(side)
        if variant == "off" or ever_had:
            return False
        if variant == "conservative":
            return not need_sync
        if variant == "guarded":
            return self.mapping.pp_size == 1
        return True   # unguarded

    # -- context side --------------------------------------------------------------------
    def respond_and_send_async(self, req: LlmRequest) -> None:
        """Open the send session of a finished prefill (context rank)."""
        self.ever_had_send_session = True
        peers = self.peers
        pieces = [p for p in plan_request(peers.ctx, peers.gen, self.kv.config, req.ctx_dp_rank,
                                          req.gen_dp_rank) if p.ctx_rank == self.dist.rank]
        fault = req.fault.on("ctx") if req.fault else None
        self.send_sessions[req.request_id] = TxSession(
            self.dist, self.kv, peers.gen_name, req.request_id, pieces,
            fault if fault and self._is_fault_rank(req, peers.ctx, req.ctx_dp_rank) else None,
            self.config.timeout_iters)
        self.send_reqs[req.request_id] = req
        req.state = LlmRequestState.DISAGG_CONTEXT_TRANS_IN_PROGRESS

    def _ctx_consensus(self, local_ids: list[int]) -> list[int]:
        ready = local_ids
        if self.ctx_need_tp_sync:
            ready = find_consensus_request_ids(
                self.dist.tp_allgather(ready, label="ctx_consensus"), self.mapping.tp_size)
        if self.ctx_need_pp_sync and self._ring is None:
            ready = find_consensus_request_ids(
                self.dist.pp_allgather(ready, label="ctx_consensus"), self.mapping.pp_size)
        return ready

    def prepare_context_requests(self, requests: list[LlmRequest]) -> list[LlmRequest]:
        """Generation-first flow: the context requests every TP/PP peer agrees are ready."""
        if not requests and not self.config.prepare_gathers_when_idle:
            return []       # C, E: nothing waits on any rank, so every rank skips together
        ready = set(self._ctx_consensus([r.request_id for r in requests]))
        return [r for r in requests if r.request_id in ready]

    def check_context_transfer_status(self, at_least_request_num: int | None,
                                      mark_complete: bool = False):
        """Poll (or with None, finish) the send sessions; returns (completed, failed) ids."""
        if self._may_skip(self.ever_had_send_session,
                          self.ctx_need_tp_sync or self.ctx_need_pp_sync, "ctx"):
            self.num_skipped_checks += 1
            return [], []
        block_all = at_least_request_num is None
        if self._ring is not None:
            return self._check_context_async(block_all, mark_complete)
        done = self._progress(self.send_sessions)
        to_process = self._to_process(self.send_sessions, self._ctx_consensus(done),
                                      at_least_request_num or 0, block_all)
        completed, failed, cancelled, _timed_out = self._wait(self.send_sessions, to_process,
                                                              block_all)
        gathers = ([self.dist.tp_allgather] if self.ctx_need_tp_sync else []) + \
            ([self.dist.pp_allgather] if self.ctx_need_pp_sync else [])
        cancelled, failed, completed = self._agree(to_process, (cancelled, failed, completed),
                                                   gathers, "ctx_outcome")
        for rid in completed:
            if mark_complete:
                self.send_reqs[rid].state = LlmRequestState.DISAGG_CONTEXT_COMPLETE
        self._close(self.send_sessions, self.send_reqs, completed, failed, cancelled)
        return completed, failed

    def _check_context_async(self, block_all: bool, mark_complete: bool):
        """check_context_transfer_status with the ring ballot instead of the PP gathers."""
        if block_all:
            for session in self.send_sessions.values():
                session.wait_complete(blocking=True)
        self._progress(self.send_sessions)
        local = {rid: _OUTCOME[s.status] for rid, s in self.send_sessions.items() if s.is_done}
        decided = self._ring.step(local)
        while block_all and any(rid not in decided for rid in self.send_sessions):
            decided.update(self._ring.step(local, blocking=True))
        if block_all and self._ring.first:
            self._ring.step({})      # announce the decisions to the other stages
        mine = {rid: o for rid, o in decided.items() if rid in self.send_sessions}
        completed = [rid for rid, o in mine.items() if o == "completed"]
        failed = [rid for rid, o in mine.items() if o == "failed"]
        cancelled = [rid for rid, o in mine.items() if o == "cancelled"]
        for rid in completed:
            if mark_complete:
                self.send_reqs[rid].state = LlmRequestState.DISAGG_CONTEXT_COMPLETE
        self._close(self.send_sessions, self.send_reqs, completed, failed, cancelled)
        return completed, failed

    # -- generation side -----------------------------------------------------------------
    def request_and_receive_async(self, req: LlmRequest) -> None:
        """Open the receive session of an admitted generation request (generation rank)."""
        self.ever_had_recv_session = True
        if req.request_id in self.recv_sessions:
            return
        peers = self.peers
        pieces = [p for p in plan_request(peers.ctx, peers.gen, self.kv.config, req.ctx_dp_rank,
                                          req.gen_dp_rank) if p.gen_rank == self.dist.rank]
        self.recv_sessions[req.request_id] = RxSession(
            self.dist, self.kv, peers.ctx_name, req.request_id, req.prompt_len, pieces,
            self._receive_fault(req, pieces), self.config.timeout_iters)
        self.recv_reqs[req.request_id] = req
        req.state = LlmRequestState.DISAGG_GENERATION_TRANS_IN_PROGRESS

    def _gen_consensus(self, local_ids: list[int]) -> list[int]:
        m = self.mapping
        size = m.pp_size if m.enable_attention_dp else m.world_size
        lists = self._gen_allgather(local_ids, label="gen_consensus") if self.gen_need_sync \
            else [local_ids]
        return find_consensus_request_ids(lists, size if self.gen_need_sync else 1)

    def check_gen_transfer_status(self, at_least_request_num: int | None):
        """Poll (or with None, finish) the receive sessions; (completed, failed, cancelled)."""
        if self._may_skip(self.ever_had_recv_session, self.gen_need_sync, "gen"):
            self.num_skipped_checks += 1
            return [], [], []
        block_all = at_least_request_num is None
        done = self._progress(self.recv_sessions)
        to_process = self._to_process(self.recv_sessions, self._gen_consensus(done),
                                      at_least_request_num or 0, block_all)
        completed, failed, cancelled, _ = self._wait(self.recv_sessions, to_process, block_all)
        cancelled, failed, completed = self._agree(
            to_process, (cancelled, failed, completed),
            [self._gen_allgather] if self.gen_need_sync else [], "gen_outcome")
        for rid in completed:
            self.recv_reqs[rid].state = LlmRequestState.DISAGG_GENERATION_TRANS_COMPLETE
        cancelled_reqs = [self.recv_reqs[rid] for rid in cancelled]
        self._close(self.recv_sessions, self.recv_reqs, completed, failed, cancelled)
        return completed, failed, cancelled_reqs

    def check_gen_transfer_complete(self) -> bool:
        return not self.recv_sessions

    def cancel_request(self, request_id: int) -> bool:
        """Cancel a live session on this rank; consensus spreads it to the peers."""
        session = self.send_sessions.get(request_id) or self.recv_sessions.get(request_id)
        if session is None:
            return False
        session.cancel()
        return True

    @property
    def num_sessions(self) -> int:
        return len(self.send_sessions) + len(self.recv_sessions)

    # -- shared --------------------------------------------------------------------------
    def _receive_fault(self, req: LlmRequest, pieces) -> str | None:
        """The fault this rank's receive sees: its own (gen_*), or the sender's (ctx_*: the
        receivers of the failing context rank's pieces see the failure or cancel message)."""
        if req.fault is None:
            return None
        own = req.fault.on("gen")
        if own and self._is_fault_rank(req, self.peers.gen, req.gen_dp_rank):
            return own
        sent = req.fault.on("ctx")
        if sent:
            sender = min(holders(self.peers.ctx, req.ctx_dp_rank))
            if any(p.ctx_rank == sender for p in pieces):
                return sent
        return None

    def _is_fault_rank(self, req: LlmRequest, spec: InstanceSpec, dp_rank: int) -> bool:
        """Faults strike one rank (the lowest holder), so only consensus can spread them."""
        return self.dist.rank == min(holders(spec, dp_rank))

    @staticmethod
    def _progress(sessions: dict) -> list[int]:
        """Advance every session without blocking (the transfer worker's background progress
        in the runtime) and return the ids done locally."""
        for session in sessions.values():
            session.wait_complete(blocking=False)
        return [rid for rid, s in sessions.items() if s.is_done]

    @staticmethod
    def _to_process(sessions: dict, consensus: list[int], wait_num: int, block_all: bool):
        if block_all:
            return list(sessions)
        chosen = [rid for rid in consensus if rid in sessions]
        for rid in sessions:
            if len(chosen) >= wait_num:
                break
            if rid not in chosen:
                chosen.append(rid)
        return chosen

    @staticmethod
    def _wait(sessions: dict, to_process: list[int], block_all: bool):
        completed, failed, cancelled, timed_out = [], [], [], []
        for rid in to_process:
            session = sessions[rid]
            result = session.wait_complete(blocking=block_all)
            if session.status == SessionStatus.CANCELLED:
                cancelled.append(rid)
            elif result == WaitResult.COMPLETED:
                completed.append(rid)
            elif result == WaitResult.TIMEOUT:
                timed_out.append(rid)        # local only: a back-off signal, no consensus
            elif result == WaitResult.FAILED:
                failed.append(rid)
        return completed, failed, cancelled, timed_out

    def _agree(self, to_process, lists, gathers, label):
        """Outcome consensus over each group in turn (context: TP, then PP): one gather of
        all three lists (packed), or three gathers (the older code); no group: local."""
        if not gathers:
            return combine_outcomes(to_process, *([list(x)] for x in lists))
        for allgather in gathers:
            if self.config.outcome_gathers == "packed":
                gathered = allgather([list(x) for x in lists], label=label)
                per = [list(x) for x in zip(*gathered)]
            else:
                per = [allgather(list(x), label=label) for x in lists]
            lists = combine_outcomes(to_process, *per)
        return lists

    def _close(self, sessions, reqs, completed, failed, cancelled) -> None:
        for rid in failed:
            reqs[rid].state = LlmRequestState.DISAGG_TRANS_ERROR
        for rid in cancelled:
            reqs[rid].state = LlmRequestState.CANCELLED
        for rid in (*completed, *failed, *cancelled):
            self.num_bytes += sessions[rid].num_bytes
            del sessions[rid]
            del reqs[rid]
