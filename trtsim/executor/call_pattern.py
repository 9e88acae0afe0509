"""Where a PyExecutor generation calls the KV-cache transceiver and the ADP collectives, per
iteration (``executor.version``).

TensorRT-LLM's loops changed: the pre-coordinator PyExecutor (``classic``) polls the receive
side only while a transfer is in flight and the send side after a queued forward (or, with
nothing to schedule, ``check_context_transfer_status(1)``); the DisaggTransferCoordinator one
(``coordinator``) calls ``prepare_context_requests`` and ``check_gen_transfer_status(0)`` every
iteration, ``check_context_transfer_status(0)`` in ``poll_progress_when_idle`` every iteration
and twice more after a queued forward of the plain loop (``_send_kv_async`` and
``reap_context_sends``). ``trtsim`` is this executor's own pattern (both directions polled every
iteration, a send poll before and after the forward). The overlap loop polls the send side
once, for the previous batch, in every version. Sources: docs/PERF_MODEL.md, section "The
call pattern".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ExecutorVersion = Literal["trtsim", "classic", "coordinator"]


@dataclass(frozen=True)
class CallPattern:
    """One executor version's transceiver and ADP calls in an iteration."""

    name: str
    prepare: Literal["waiting", "new_if_any", "new_always"]   # prepare_context_requests: all
    #   waiting context requests of a context rank / this iteration's new ones, only if any /
    #   this iteration's new ones, every iteration and role
    gen_poll_always: bool        # check_gen_transfer_status(0) every iteration (else: only
    #                              while a request of this rank is in transfer)
    gen_check_after_admit: bool  # one more check_gen_transfer_status(0) after admitting
    send_poll_after_schedule: Literal["always", "nothing_fits"]   # check_context_transfer_status
    #   (0) every iteration, or (1) only when the schedule holds nothing
    sends_after_forward: int     # check_context_transfer_status(0) after a queued forward
    #                              (plain loop) or an executed PP micro-batch
    sends_when_idle: int         # ... after an iteration that queued nothing
    adp_error_votes: bool        # handle_errors_synced: a tp_allgather every iteration (ADP)
    adp_balance: bool            # a tp_allgather of batch sizes after scheduling (ADP)
    adp_timeouts: bool           # handle_timeouts_synced: a tp_allgather every iteration (ADP)
    first_token_gather: bool     # the first-token responses: a tp_gather when queued (ADP)
    flush_gather: bool           # _flush_pending_transfer_responses: a tp_gather (ADP)
    responses_every_iteration: bool   # plain loop: the responses tp_gather (ADP) even when
    #                                   nothing was queued (the overlap loop always gathers)
    previous_if_queued: bool     # overlap loop: process the previous batch whenever it was
    #                              queued (instance-wide under ADP); else only a non-empty one

    def sends_after_update(self, queued: bool, overlap: bool) -> int:
        """check_context_transfer_status(0) calls once a batch was (or was not) queued."""
        if overlap:
            return 1 if queued else 0
        return self.sends_after_forward if queued else self.sends_when_idle


PATTERNS = {
    "trtsim": CallPattern(
        "trtsim", prepare="waiting", gen_poll_always=True, gen_check_after_admit=False,
        send_poll_after_schedule="always", sends_after_forward=1, sends_when_idle=1,
        adp_error_votes=False, adp_balance=True, adp_timeouts=True, first_token_gather=False,
        flush_gather=False, responses_every_iteration=True, previous_if_queued=False),
    "classic": CallPattern(
        "classic", prepare="new_if_any", gen_poll_always=False, gen_check_after_admit=True,
        send_poll_after_schedule="nothing_fits", sends_after_forward=1, sends_when_idle=0,
        adp_error_votes=False, adp_balance=False, adp_timeouts=False, first_token_gather=True,
        flush_gather=False, responses_every_iteration=False, previous_if_queued=True),
    "coordinator": CallPattern(
        "coordinator", prepare="new_always", gen_poll_always=True, gen_check_after_admit=True,
        send_poll_after_schedule="always", sends_after_forward=2, sends_when_idle=0,
        adp_error_votes=True, adp_balance=False, adp_timeouts=True, first_token_gather=True,
        flush_gather=True, responses_every_iteration=False, previous_if_queued=True),
}
