"""Virtual time of the ranks (pure rules).

Each rank has a clock in seconds. Modelled work (a forward pass, a kernel, host overhead)
advances it (``Distributed.advance``). A collective completes for all members at the latest
arrival plus its modelled cost; each member waited from its own arrival until the latest one,
and the wait is attributed to the member that arrived last, in that call. A p2p receive
completes at the later of its own arrival and the send's clock plus the transfer time. The
clock travels with the call records, so the same rank code gives the same timeline on every
backend.

Costs: a host-object collective's price is given by whoever composes the run (the launch and
the scenario jobs use the performance model's measured host-gather cost); without one it is
free. Tensors use the link model of ``ClockModel``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

OBJECT_BYTES = 256          # a small pickled host object (ids, states): the payload assumed


@dataclass(frozen=True)
class ClockModel:
    """What communication costs in virtual time. ``host_gather(group_size, payload_bytes)``
    prices one host-object collective (hashable: models are memoised)."""

    host_gather: Callable[[int, float], float] | None = None
    tensor_bandwidth: float = 100e9       # bytes/s for tensor collectives and p2p (NVLink-class)
    tensor_latency: float = 5e-6          # s per tensor collective or message
    object_bytes: int = OBJECT_BYTES

    def collective_cost(self, op: str, group_size: int, signature: str, nbytes: int = 0) -> float:
        """Seconds one collective takes once every member has arrived."""
        if group_size <= 1:
            return 0.0
        if signature.startswith("tensor"):
            return self.tensor_latency + 2 * (group_size - 1) / group_size * nbytes \
                / self.tensor_bandwidth
        return _host_cost(self, group_size)

    def transfer_time(self, nbytes: int, is_tensor: bool) -> float:
        if not is_tensor:
            return _host_cost(self, 2) / 2
        return self.tensor_latency + nbytes / self.tensor_bandwidth


@functools.lru_cache(maxsize=256)
def _host_cost(model: ClockModel, group_size: int) -> float:
    """A host-object collective's price (memoised: it sits on the inproc hot path)."""
    if model.host_gather is None:
        return 0.0
    return model.host_gather(group_size, model.object_bytes)


@dataclass(frozen=True)
class Wait:
    """One member's wait in one call: for whom, how long."""

    rank: int
    waited_for: int
    seconds: float
    call: str


def last_arrival(arrivals: dict[int, float]) -> int:
    """The member that arrived last (the lowest rank among ties)."""
    times = arrivals.values()
    latest = max(times)
    if min(times) == latest:        # all at once (no modelled work between calls): in C
        return min(arrivals)
    return min(m for m, t in arrivals.items() if t == latest)


def complete_collective(arrivals: dict[int, float], cost: float, call: str
                        ) -> tuple[float, list[Wait]]:
    """(completion time, waits) for members arriving at ``arrivals`` (rank -> clock)."""
    last_rank = last_arrival(arrivals)
    last = arrivals[last_rank]
    waits = [Wait(r, last_rank, last - t, call) for r, t in sorted(arrivals.items())
             if t < last]
    return last + cost, waits


@dataclass
class RankClock:
    """One rank's virtual clock and its timeline: (start, end, kind, label, peer) events,
    kind compute | collective | wait | p2p; a wait names the rank waited for."""

    now: float = 0.0

    def __post_init__(self) -> None:
        self.events: list[tuple[float, float, str, str, int | None]] = []
        self.waited: dict[int, float] = {}         # rank waited for -> seconds

    def advance(self, seconds: float, label: str = "compute") -> None:
        if seconds < 0:
            raise ValueError(f"advance({seconds!r}): virtual time only moves forward")
        self.events.append((self.now, self.now + seconds, "compute", label, None))
        self.now += seconds

    def finish_call(self, arrival: float, end: float, call: str, waited_for: int | None,
                    wait_until: float, kind: str = "collective") -> None:
        """Record a call entered at ``arrival`` that completed at ``end``; the part before
        ``wait_until`` was spent waiting for ``waited_for``."""
        if waited_for is not None and wait_until > arrival:
            self.events.append((arrival, wait_until, "wait", call, waited_for))
            self.waited[waited_for] = self.waited.get(waited_for, 0.0) + wait_until - arrival
            arrival = wait_until
        self.events.append((arrival, end, kind, call, None))
        self.now = max(self.now, end)

    def summary(self) -> dict:
        """Seconds per event kind, and waits per rank waited for."""
        out: dict = {"now": self.now}
        for start, end, kind, _, _ in self.events:
            out[kind] = out.get(kind, 0.0) + end - start
        out["waited_for"] = dict(sorted(self.waited.items()))
        return out


def receive_time(recv_arrival: float, send_clock: float, transfer: float) -> float:
    """When a p2p receive completes."""
    return max(recv_arrival, send_clock + transfer)


def finish_receive(clock: RankClock, send_clock: float, transfer: float, call: str,
                   peer: int) -> None:
    """A p2p receive completes at the later of the receiver's own arrival (now) and the send's
    clock plus the transfer; any wait before that is attributed to the sender."""
    arrival = clock.now
    end = receive_time(arrival, send_clock, transfer)
    clock.finish_call(arrival, end, call, peer if end > arrival else None, end, kind="p2p")


def finish_collective(clocks, members, arrivals: dict[int, float], cost: float,
                      call: str) -> None:
    """Each of ``members`` (``clocks[m]`` its clock) leaves the collective at the latest
    arrival plus its cost, having waited for the last member from its own arrival."""
    last = last_arrival(arrivals)
    until = arrivals[last]
    end = until + cost
    for m in members:
        arrival = arrivals[m]
        if arrival < until:          # ``RankClock.finish_call``, waited; on every member
            clocks[m].finish_call(arrival, end, call, last, until)
        else:                        # the last to arrive (or tied with it): no wait
            clock = clocks[m]
            clock.events.append((arrival, end, "collective", call, None))
            if end > clock.now:
                clock.now = end
