"""PyExecutor: the per-rank iteration loop of one instance (DESIGN 3.5), plain and overlap.

One iteration, and the collectives each step issues (labels in quotes):
  1. error sync, when in-flight cancel is on: world allreduce max ('error_sync'; ADP:
     tp_allgather of votes);
  2. fetch: ADP gathers rank states (tp_allgather 'rank_states'); rank 0 pops the queue and
     broadcasts ('fetch_requests'); ADP keeps the requests routed to this DP rank;
  3. context: prepare_context_requests ('ctx_consensus'); generation: poll transfers
     (check_gen_transfer_status(0)); schedule (ADP: tp_allgather 'adp_balance'); admit
     generation requests (request_and_receive_async); poll sends (check_context_transfer_status(0));
  4. ADP: can-queue check (tp_allgather 'can_queue'); an empty DP rank runs a dummy batch;
     gen-only benchmark mode: the fill gate (tp_cp_allgather 'benchmark_fill');
  5. forward, sample, update; context: respond_and_send_async for finished prefills, then
     check_context_transfer_status(0);
  6. timeouts (ADP: tp_allgather 'timeouts'), responses (ADP: tp_gather 'responses', even
     when empty), stats.
The overlap loop launches forward(N) before the update of N-1: the same calls, one batch
later. The PP loop lives in ``pp_loop.py``. Which transfer checks, prepare calls and ADP
gathers run in an iteration follows ``config.version`` (``call_pattern.py``): trtsim's own
order above, or one of TensorRT-LLM's loops.
"""

from __future__ import annotations

from collections import deque

from ..comm.distributed import Distributed
from ..disagg.transceiver import KvCacheTransceiverV2
from ..state.kv_cache import KVCacheManager
from ..state.request import LlmRequest, LlmRequestState as S
from .config import ExecutorConfig
from .fill_gate import INSUFFICIENT_KV, FillStatus, fill_decision
from .report import ExecutorReport, IterationStats, ResponseRecord
from .scheduler import fits, free_blocks, schedule

class PyExecutor:
    """One rank of one instance; ``role`` is ``ctx`` (prefill and send) or ``gen``."""

    def __init__(self, dist: Distributed, kv: KVCacheManager, transceiver: KvCacheTransceiverV2,
                 config: ExecutorConfig, requests: list[LlmRequest], sampler=None, seed: int = 0):
        self.dist, self.kv, self.tc, self.config = dist, kv, transceiver, config
        self.pattern = config.pattern
        self.m = dist.mapping
        self.role = dist.role
        self.adp = self.m.enable_attention_dp
        self.queue = deque(sorted(requests, key=lambda r: (r.arrival_iter, r.request_id))) \
            if self.m.rank == 0 else deque()
        self.num_total = len(requests)
        self.num_fetched = 0
        self.active: dict[int, LlmRequest] = {}
        self.finished: list[ResponseRecord] = []   # rank 0: every request's final record
        self.sampler = sampler                     # the generation step (MTP), if any
        self.seed = seed                           # what the prefill's KV values derive from
        self.iter_counter = 0
        self.shutdown = False
        self.stats: list[IterationStats] = []
        self._prev_batch: tuple[list[LlmRequest], dict[int, int], bool] | None = None
        self._new: list[LlmRequest] = []           # requests this rank admitted this iteration
        self._stall_iters = 0
        self._pending_responses: list[LlmRequest] = []
        self.busy: set[int] = set()                # PP: requests in a micro-batch in flight
        self.num_verified = 0                      # received KV equal to the prefill's
        self.kv_mismatches: list[int] = []

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> dict:
        loop = self.config.loop_for(self.m.pp_size)
        if loop == "pp":
            from .pp_loop import PipelineLoop
            pipeline = PipelineLoop(self)
            step = pipeline.iteration
        else:
            def step():
                self._iteration(overlap=loop == "overlap")
        while not self.shutdown and self.iter_counter < self.config.max_iterations:
            self.dist.set_iteration(self.iter_counter)
            step()
            self.iter_counter += 1
        if self.adp and not (self.pattern.flush_gather or self.pattern.responses_every_iteration):
            self.deliver_responses()     # every rank stops in the same iteration: symmetric
        return self.report()

    def _iteration(self, overlap: bool = False) -> None:
        self.sync_errors()
        self.admit(self.fetch_new_requests())
        if self.shutdown:
            return
        self.prepare_and_poll()
        batch = self.schedule_batch()
        queued = self.can_forward(batch)
        if not queued:
            batch = []
        self.first_token_responses(queued)
        if overlap:
            previous = self._prev_batch
            self._prev_batch = (batch, self.forward(batch), queued)
            if previous and (previous[2] if self.pattern.previous_if_queued else previous[0]):
                self.update(previous[0], previous[1], True, overlap=True)
        else:
            self.update(batch, self.forward(batch), queued)
        self.end_of_iteration(queued or overlap)

    # -- step 1: error sync --------------------------------------------------------------
    def sync_errors(self) -> None:
        # the coordinator's handle_errors_synced votes every iteration under ADP
        votes = self.adp and self.pattern.adp_error_votes and self.m.world_size > 1
        if not (self.config.enable_inflight_cancel or votes):
            return
        vote = int(any(r.fault is not None and r.fault.kind == "error"
                       for r in self.active.values()))
        if self.adp:
            self.dist.tp_allgather(vote, label="error_sync")
        else:
            self.dist.allreduce(vote, op="max", label="error_sync")

    # -- step 2: fetch -------------------------------------------------------------------
    def _rank_states(self) -> list[int]:
        if self.adp:
            return self.dist.tp_allgather(len(self.active), label="rank_states")
        return [len(self.active)]

    def _pop_queue(self, busy: list[int]) -> dict:
        """Rank 0: the requests that arrived by now, and whether the instance may stop."""
        new = []
        while self.queue and self.queue[0].arrival_iter <= self.iter_counter:
            new.append(self.queue.popleft())
        done = not self.queue and not new and not any(busy)
        return {"new": new, "shutdown": done}

    def fetch_new_requests(self) -> list[LlmRequest]:
        busy = self._rank_states()
        msg = self._pop_queue(busy) if self.m.rank == 0 else None
        msg = self.dist.broadcast(msg, root=0, label="fetch_requests")
        self.shutdown = msg["shutdown"]
        return msg["new"]

    def admit(self, new: list[LlmRequest]) -> None:
        """Keep the requests routed to this rank (ADP: request i on DP rank i % dp)."""
        self.num_fetched += len(new)
        self._new = []
        for req in new:
            owner = req.gen_dp_rank if self.role == "gen" else req.ctx_dp_rank
            if self.adp and owner != self.m.dp_rank:
                continue
            req.state = S.DISAGG_GENERATION_INIT if self.role == "gen" else S.CONTEXT_INIT
            req.stamps["arrived"] = self.iter_counter
            self.active[req.request_id] = req
            self._new.append(req)

    # -- step 3: consensus, polls, schedule, admission ------------------------------------
    def prepare_and_poll(self) -> None:
        p = self.pattern
        if p.prepare == "waiting":
            if self.role == "ctx":
                self.tc.prepare_context_requests(
                    [r for r in self.active.values() if r.state == S.CONTEXT_INIT])
        else:
            new = [r for r in self._new if r.state == S.CONTEXT_INIT]
            if new or p.prepare == "new_always":
                self.tc.prepare_context_requests(new)
        # The executor polls both directions whatever its role, as the runtime does: a pure
        # context worker's receive check (and a generation worker's send check) is where
        # the sticky short-circuit saves its gathers.
        if p.gen_poll_always or any(r.state == S.DISAGG_GENERATION_TRANS_IN_PROGRESS
                                    for r in self.active.values()):
            self.take_gen_status(*self.tc.check_gen_transfer_status(0))

    def take_gen_status(self, completed, failed, cancelled) -> None:
        """Act on check_gen_transfer_status's outcome: verify, start or finish requests."""
        for rid in completed:
            req = self.active[rid]
            req.stamps["transferred"] = self.iter_counter
            if self.kv.matches_prefill(rid, self.seed):
                self.num_verified += 1
            else:
                self.kv_mismatches.append(rid)
            req.tokens.append(0)                # the context's first token
            req.state = S.GENERATION_IN_PROGRESS
            if req.num_generated >= req.max_new_tokens:
                req.state = S.GENERATION_COMPLETE
                self._finish(req)
        for rid in failed:
            self._finish(self.active[rid])
        for req in cancelled:
            self._finish(req)

    def schedule_batch(self) -> list[LlmRequest]:
        batch, admit = schedule(self.active.values(), self.kv, self.config, self.role, self.busy)
        if self.adp and self.pattern.adp_balance:
            self.dist.tp_allgather(len(batch), label="adp_balance")
        self.receive(admit)
        for req in batch:                     # context: the prefill's blocks
            if req.state == S.CONTEXT_INIT and not self.kv.has_sequence(req.request_id):
                self.kv.add_sequence(req.request_id, req.prompt_len)
        self.poll_after_schedule(bool(batch or admit))
        return batch

    def receive(self, admit: list[LlmRequest]) -> None:
        """Generation: allocate and open the receive of each admitted request."""
        for req in admit:
            self.kv.add_sequence(req.request_id, req.prompt_len)
            self.tc.request_and_receive_async(req)
        if admit and self.pattern.gen_check_after_admit:
            self.take_gen_status(*self.tc.check_gen_transfer_status(0))

    def poll_after_schedule(self, scheduled: bool) -> None:
        """The send poll after scheduling: every iteration, or (classic) at least one when
        nothing could be scheduled, to free KV."""
        if self.pattern.send_poll_after_schedule == "always":
            self.poll_sends()
        elif not scheduled:
            self.poll_sends(1)

    def poll_sends(self, at_least: int = 0) -> None:
        """check_context_transfer_status(n) (every role) and retire what finished sending."""
        completed, failed = self.tc.check_context_transfer_status(at_least)
        for rid in completed:
            self.active[rid].state = S.DISAGG_CONTEXT_COMPLETE
            self._finish(self.active[rid])
        for rid in failed:
            self._finish(self.active[rid])
        for req in [r for r in self.active.values() if r.state == S.CANCELLED]:
            self._finish(req)

    # -- step 4: can-queue and the benchmark fill gate ------------------------------------
    def can_forward(self, batch: list[LlmRequest]) -> bool:
        ok = True
        if self.adp:
            sizes = self.dist.tp_allgather(len(batch), label="can_queue")
            # An empty DP rank runs a dummy request while others have work; nobody forwards
            # when every DP rank is empty.
            ok = any(sizes)
        if self.role == "gen" and self.config.benchmark_fill != "off":
            ok = ok and self._benchmark_fill_ready()
        return ok

    def _benchmark_fill_ready(self) -> bool:
        waiting = [r for r in self.active.values() if r.state == S.DISAGG_GENERATION_INIT]
        free = free_blocks(self.active.values(), self.kv)
        mine = FillStatus(
            fetched_all=self.num_fetched >= self.num_total,
            settled=not any(r.state in (S.DISAGG_GENERATION_INIT, S.DISAGG_TRANS_ERROR,
                                        S.DISAGG_GENERATION_TRANS_IN_PROGRESS)
                            for r in self.active.values()),
            transfers_done=self.tc.check_gen_transfer_complete(),
            unfit=tuple(r.request_id for r in waiting if not fits(r, free, self.kv)))
        everyone = self.dist.tp_cp_allgather(mine, label="benchmark_fill")
        limit = 1 if self.config.benchmark_fill == "fail_fast" else self.config.watchdog_iters
        decision = fill_decision(everyone, self._stall_iters, limit)
        self._stall_iters = decision.stall_iters
        if decision.give_up:
            raise RuntimeError(f"{INSUFFICIENT_KV}: in iteration {self.iter_counter} every "
                               f"request is fetched, requests {list(decision.give_up)} fit in "
                               f"no rank's KV cache ({free} free blocks here) and no transfer "
                               f"is in progress to free any")
        return decision.ready

    # -- step 5: forward, sample, update --------------------------------------------------
    def forward(self, batch: list[LlmRequest]) -> dict[int, int]:
        """Run the batch; the tokens each generation request emits (MTP), by request id."""
        if batch:
            self.dist.advance(self.config.forward_ms / 1000.0, "forward")
        self.stats.append(IterationStats(
            self.iter_counter, len(batch),
            sum(r.prompt_len for r in batch if r.state == S.CONTEXT_INIT),
            sum(r.state == S.GENERATION_IN_PROGRESS for r in batch),
            self.config.forward_ms if batch else 0.0))
        if self.sampler is not None and self.role == "gen" and batch and self.m.is_last_pp_rank():
            return self.sampler.step(self, batch)        # only the last PP stage samples
        return {}

    def update(self, batch: list[LlmRequest], emitted: dict[int, int], queued: bool = True,
               overlap: bool = False) -> None:
        for req in batch:
            self.update_request(req, emitted.get(req.request_id))
        for _ in range(self.pattern.sends_after_update(queued, overlap)):
            self.poll_sends()

    def update_request(self, req: LlmRequest, tokens: int | None = None) -> None:
        """Account one forward of ``req``: a prefill (context) or ``tokens`` new tokens."""
        if req.state == S.CONTEXT_INIT:
            self.prefill(req)
            self.send_kv(req)
        elif req.state == S.GENERATION_IN_PROGRESS:
            if tokens is None:
                tokens = 1
            tokens = min(tokens, req.max_new_tokens - req.num_generated)
            self.kv.grow(req.request_id, req.seq_len + tokens)
            req.tokens.extend([0] * tokens)
            req.stamps.setdefault("first_gen", self.iter_counter)
            req.stamps.setdefault("steps", 0)
            req.stamps["steps"] += 1
            if req.num_generated >= req.max_new_tokens:
                req.state = S.GENERATION_COMPLETE
                self._finish(req)

    def prefill(self, req: LlmRequest) -> None:
        """Context: the prefill wrote this stage's KV and produced the first token."""
        self.kv.write_prefill(req.request_id, self.seed)
        req.tokens.append(0)
        req.stamps["prefilled"] = self.iter_counter

    def send_kv(self, req: LlmRequest) -> None:
        """Context: hand a finished prefill to the transceiver."""
        self.tc.respond_and_send_async(req)

    def _finish(self, req: LlmRequest) -> None:
        req.stamps["finished"] = self.iter_counter
        self.kv.free_resources(req.request_id)
        self.active.pop(req.request_id, None)
        self._pending_responses.append(req)

    def first_token_responses(self, queued: bool) -> None:
        """TRT-LLM's loops send the first-token responses of a queued batch (ADP: tp_gather)."""
        if queued and self.adp and self.pattern.first_token_gather:
            self.dist.tp_gather([], root=0, label="first_token")

    # -- step 6 --------------------------------------------------------------------------
    def end_of_iteration(self, queued: bool = True) -> None:
        p = self.pattern
        if self.adp and p.adp_timeouts:
            timed_out = [r.request_id for r in self.active.values()
                         if r.fault is not None and r.fault.kind == "timeout"]
            self.dist.tp_allgather(timed_out, label="timeouts")
        if self.adp and p.flush_gather:
            self.deliver_responses("transfer_responses")
        if not self.adp or p.responses_every_iteration or queued:
            self.deliver_responses()

    def deliver_responses(self, label: str = "responses") -> None:
        """Finished requests' records to rank 0 (ADP: a tp_gather, even when empty)."""
        responses = [_record(r) for r in self._pending_responses]
        self._pending_responses = []
        if self.adp:
            gathered = self.dist.tp_gather(responses, root=0, label=label)
            responses = [x for part in gathered for x in part] if gathered is not None else []
        if self.m.rank == 0:
            self.finished.extend(responses)

    def report(self) -> ExecutorReport:
        return ExecutorReport(self.role, self.dist.rank, self.iter_counter,
                              self.finished if self.m.rank == 0 else [], sorted(self.active),
                              self.stats, self.tc.num_skipped_checks, self.tc.num_bytes,
                              self.num_verified, self.kv_mismatches)


def _record(req: LlmRequest) -> ResponseRecord:
    return ResponseRecord(req.request_id, req.state.value, req.prompt_len, req.num_generated,
                          dict(req.stamps))
