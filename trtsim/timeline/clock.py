"""Virtual time of the ranks (pure rules).

Each rank has a clock in seconds. Modelled work (a forward pass, a kernel, host overhead)
advances it (``Distributed.advance``). A collective completes for all members at the latest
arrival plus its modelled cost; each member waited from its own arrival until the latest one,
and the wait is attributed to the member that arrived last, in that call. A p2p receive
completes at the later of its own arrival and the send's clock plus the transfer time. The
clock travels with the call records, so the same rank code gives the same timeline on every
backend.

Costs: host-object collectives are pickled gathers whose cost was measured on this machine
(``perf.comm_cost.host_gather_cost``); tensors use the link model of ``ClockModel``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from ..perf.comm_cost import HOST_GATHER_MEASURED, HostGatherParams, host_gather_cost

OBJECT_BYTES = 256          # a small pickled host object (ids, states): the payload assumed


@dataclass(frozen=True)
class ClockModel:
    """What communication costs in virtual time."""

    host: HostGatherParams = HOST_GATHER_MEASURED
    cores: int = 64                       # host cores of a node: gathers are not oversubscribed
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
            return host_gather_cost(2, self.object_bytes, replace(self.host, cores=self.cores)) / 2
        return self.tensor_latency + nbytes / self.tensor_bandwidth


@functools.lru_cache(maxsize=256)
def _host_cost(model: ClockModel, group_size: int) -> float:
    """A host-object collective's price (memoised: it sits on the inproc hot path)."""
    return host_gather_cost(group_size, model.object_bytes, replace(model.host, cores=model.cores))


@dataclass(frozen=True)
class Wait:
    """One member's wait in one call: for whom, how long."""

    rank: int
    waited_for: int
    seconds: float
    call: str


def complete_collective(arrivals: dict[int, float], cost: float, call: str
                        ) -> tuple[float, list[Wait]]:
    """(completion time, waits) for members arriving at ``arrivals`` (rank -> clock)."""
    last_rank = max(sorted(arrivals), key=lambda r: arrivals[r])
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
