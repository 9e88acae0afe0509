"""The pipeline-parallel executor loop (DESIGN 3.5): one micro-batch enters per iteration.

Iteration t on stage s of P:
  fetch        first stage: tp broadcast from rank 0; then recv_object / isend_object down
               the stages ('fetch_requests'), so every stage admits the same requests;
  schedule     first stage schedules micro-batch t and propagates it down the ring
               (recv_object / isend_object, tag SCHED); every stage applies its admissions;
  forward      activations stage to stage (recv_tensor from prev, isend_tensor to next);
  executed     micro-batch t-(P-1) finished on the last stage: it samples and the sample
               state, with the executed-batch count, goes round the ring (last -> first ->
               ... -> P-2, tag SAMPLE);
  handle       ``ring_count``: every stage handles the executed batch now (update, context
               KV send, check_context_transfer_status(0), responses); ``on_arrival``: a
               context stage sends a micro-batch's KV right after its own forward of it,
               i.e. stage s in iteration t-(P-1)+s, so stages flip their transceivers'
               sticky markers in different iterations.
A request stays out of scheduling while its micro-batch is in flight.
"""

from __future__ import annotations

from collections import deque

import torch

from ..state.request import LlmRequest, LlmRequestState as S
from .scheduler import schedule

TAG_FETCH, TAG_SCHED, TAG_ACT, TAG_SAMPLE = 11, 12, 13, 14


class PipelineLoop:
    """The PP iteration of one PyExecutor."""

    def __init__(self, ex):
        self.ex = ex
        m = ex.m
        self.first, self.last = m.is_first_pp_rank(), m.is_last_pp_rank()
        self.prev, self.next = m.prev_pp_rank(), m.next_pp_rank()
        self.stage, self.stages = m.pp_rank, m.pp_size
        # (iteration, request ids, tokens each emits once sampled on the last stage)
        self.in_flight: deque[tuple[int, list[int], dict[int, int]]] = deque()
        self.deferred: list[LlmRequest] = []                     # sends retried next iteration

    def iteration(self) -> None:
        ex, dist = self.ex, self.ex.dist
        ex.sync_errors()
        ex.admit(self._fetch())
        if ex.shutdown:
            return
        ex.prepare_and_poll()
        batch, admitted = self._schedule()
        ex.poll_after_schedule(bool(batch or admitted))
        queued = ex.can_forward(batch)
        if not queued:
            batch = []
        ex.first_token_responses(queued)
        emitted = ex.forward(batch)
        act = torch.full((4,), float(ex.iter_counter))
        if not self.first:
            dist.recv_tensor(act, self.prev, tag=TAG_ACT, label="pp_activation")
        if not self.last:
            dist.isend_tensor(act, self.next, tag=TAG_ACT, label="pp_activation")
        self.in_flight.append((ex.iter_counter, [r.request_id for r in batch], emitted))
        ex.busy.update(r.request_id for r in batch)
        if ex.config.pp_handling == "on_arrival" and ex.role == "ctx":
            self._send_on_arrival()
        self._handle(self._executed())
        ex.end_of_iteration(queued)

    # -- ring messages -------------------------------------------------------------------
    def _chain(self, value, tag: int, label: str):
        """Pass a value from the first stage down to the last in this iteration."""
        if not self.first:
            value = self.ex.dist.recv_object(self.prev, tag=tag, label=label)
        if not self.last:
            self.ex.dist.isend_object(value, self.next, tag=tag, label=label)
        return value

    def _fetch(self) -> list[LlmRequest]:
        ex = self.ex
        busy = ex._rank_states()
        msg = None
        if self.first:
            if ex.m.rank == 0:
                msg = ex._pop_queue(busy + [sum(bool(ids) for _, ids, _ in self.in_flight)])
            msg = ex.dist.tp_broadcast(msg, root=0, label="fetch_requests")
        msg = self._chain(msg, TAG_FETCH, "fetch_requests")
        ex.shutdown = msg["shutdown"]
        return msg["new"]

    def _schedule(self) -> tuple[list[LlmRequest], bool]:
        ex = self.ex
        meta = None
        if self.first:
            batch, admit = schedule(ex.active.values(), ex.kv, ex.config, ex.role, ex.busy)
            meta = {"batch": [r.request_id for r in batch], "admit": [r.request_id for r in admit]}
        meta = self._chain(meta, TAG_SCHED, "pp_schedule")
        if ex.adp and ex.pattern.adp_balance:
            ex.dist.tp_allgather(len(meta["batch"]), label="adp_balance")
        ex.receive([ex.active[rid] for rid in meta["admit"]])
        batch = [ex.active[rid] for rid in meta["batch"]]
        for req in batch:
            if req.state == S.CONTEXT_INIT and not ex.kv.has_sequence(req.request_id):
                ex.kv.add_sequence(req.request_id, req.prompt_len)
        return batch, bool(meta["admit"])

    def _executed(self) -> dict | None:
        """The sample state of the micro-batch that left the last stage, round the ring."""
        ex = self.ex
        done = None
        if self.in_flight and self.in_flight[0][0] <= ex.iter_counter - (self.stages - 1):
            done = self.in_flight.popleft()
        state = None
        if self.last:
            ids, emitted = (done[1], done[2]) if done else ([], {})
            state = {"count": int(done is not None), "ids": ids,
                     "accepted": {rid: emitted.get(rid, 1) for rid in ids if rid in ex.active}}
            ex.dist.isend_object(state, self.next, tag=TAG_SAMPLE, label="pp_sample_state")
        else:
            state = ex.dist.recv_object(self.prev, tag=TAG_SAMPLE, label="pp_sample_state")
            if self.stage != self.stages - 2:
                ex.dist.isend_object(state, self.next, tag=TAG_SAMPLE, label="pp_sample_state")
        return state if state["count"] else None

    # -- handling executed batches -------------------------------------------------------
    def _handle(self, state: dict | None) -> None:
        ex = self.ex
        for req in list(self.deferred):
            self.deferred.remove(req)
            ex.send_kv(req)
        if state is not None:
            for rid in state["ids"]:
                ex.busy.discard(rid)
                req = ex.active.get(rid)
                if req is None:
                    continue
                if req.state == S.CONTEXT_INIT and self._retry_here(req):
                    ex.prefill(req)
                    self.deferred.append(req)          # this stage sends next iteration
                    continue
                ex.update_request(req, state["accepted"].get(rid))
        # each executed micro-batch's sends are polled (trtsim also polls without one)
        for _ in range(ex.pattern.sends_after_update(state is not None, overlap=False)):
            ex.poll_sends()

    def _send_on_arrival(self) -> None:
        """Stage s sends the KV of the micro-batch it forwarded s iterations ago."""
        ex = self.ex
        target = ex.iter_counter - self.stage
        for it, ids, _ in self.in_flight:
            if it == target:
                for rid in ids:
                    req = ex.active.get(rid)
                    if req is not None and req.state == S.CONTEXT_INIT:
                        ex.prefill(req)
                        ex.send_kv(req)

    def _retry_here(self, req: LlmRequest) -> bool:
        """An injected ``send_retry@S`` fault: stage S's first attempt must be retried."""
        return req.fault is not None and req.fault.kind == "send_retry" \
            and req.fault.stage == self.stage
