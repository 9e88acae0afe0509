"""Asynchronous consensus over the PP stages: a ballot passed round the ring.

The blocking context consensus is a pp_allgather: every iteration, every stage waits for all
others (a pipeline-wide rendezvous, incident 5.2). Here stage 0 starts a ballot; each stage,
when the ballot reaches it, adds its votes (the outcome of every session it has finished and
not yet seen decided) and passes it on with non-blocking p2p. When the ballot returns to
stage 0, a request every stage voted for is decided (cancelled if any stage cancelled, else
failed if any failed, else completed); the next ballot announces the decisions, and each
stage applies them when it passes. Nobody waits for anybody: a stage that has nothing to do
this iteration just polls its posted receive.
"""

from __future__ import annotations

from ..comm.distributed import Distributed

TAG_RING = 17
_PRECEDENCE = ("cancelled", "failed", "completed")


def combine(outcomes: list[str]) -> str:
    """Cancelled > failed > completed, as the blocking outcome consensus decides."""
    return next(o for o in _PRECEDENCE if o in outcomes)


class RingConsensus:
    """One stage's side of the ring; ``step`` never blocks unless ``blocking``."""

    def __init__(self, dist: Distributed, label: str = "ctx_consensus_ring"):
        m = dist.mapping
        self.dist, self.label = dist, label
        self.first, self.size = m.is_first_pp_rank(), m.pp_size
        self.prev, self.next = m.prev_pp_rank(), m.next_pp_rank()
        self._recv = dist.irecv_object(self.prev, TAG_RING, label=label)
        self._in_flight = False
        self._announce: dict[int, str] = {}
        self.num_rounds = 0

    def step(self, local: dict[int, str], blocking: bool = False) -> dict[int, str]:
        """Advance the ring with this stage's finished outcomes; returns the decisions this
        stage learned now (request id -> outcome)."""
        if self.first and not self._in_flight:
            self._send({"votes": {rid: [o] for rid, o in local.items()},
                        "decided": self._announce})
            self._announce = {}
            self._in_flight = True
        if not (blocking or self._recv.is_completed()):
            return {}
        ballot = self._recv.wait()
        self._recv = self.dist.irecv_object(self.prev, TAG_RING, label=self.label)
        if self.first:
            self._in_flight = False
            self.num_rounds += 1
            decided = {rid: combine(outs) for rid, outs in ballot["votes"].items()
                       if len(outs) == self.size}
            self._announce = decided
            return decided
        learned = ballot["decided"]
        for rid, outcome in local.items():
            if rid not in learned:
                ballot["votes"].setdefault(rid, []).append(outcome)
        self._send(ballot)
        return learned

    def _send(self, ballot: dict) -> None:
        self.dist.isend_object(ballot, self.next, TAG_RING, label=self.label)
