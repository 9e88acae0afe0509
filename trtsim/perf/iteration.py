"""One executor iteration: GPU-bound or host-bound, with or without the overlap scheduler.

The host thread of each rank runs the iteration's Python work (scheduling, input preparation,
request bookkeeping) and enters every host-object collective in turn, so those collectives sit
on the host's critical path:

    host  = host_work + sum of the iteration's host collectives' prices
    step  = max(gpu, host)     overlap scheduler on (TensorRT-LLM's default): the host prepares
                               and launches iteration N+1 while the GPU runs N
    step  = gpu + host         overlap scheduler off (disable_overlap_scheduler: true)

A collective's price (``host_collectives``): every gather that follows host work is a point
where the members wait for the slowest of them (latency + excess over the host work since the
previous such point: the iteration's host work split evenly between its sync points); a gather
entered right after another one of the same call (the outcome after its consensus, a PP
consensus after the TP one) finds its members aligned and costs its latency; a rooted call
(a broadcast, a gather to one root) costs its latency: the members do not wait for each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from .host_collectives import HOST_COLLECTIVES, QUANTILES, HostCollectiveData

Counts = tuple[tuple[int, float], ...]      # (group size, calls per rank-iteration)


def _check_counts(owner: str, **counts: Counts) -> None:
    for name, rows in counts.items():
        for size, calls in rows:
            if isinstance(size, bool) or not isinstance(size, int) or size < 1 \
                    or not isinstance(calls, (int, float)) or calls < 0:
                raise ValueError(f"{owner}.{name}={rows!r}: each row must be (group size >= 1, "
                                 f"calls >= 0)")


@dataclass(frozen=True)
class HostCollectives:
    """The host-object collectives one rank enters per iteration, by kind and group size."""

    sync: Counts = ()         # gathers after host work: latency + the wait for the slowest
    aligned: Counts = ()      # gathers right after another of the same call: latency
    rooted: Counts = ()       # broadcasts and gathers to a root: latency

    def __post_init__(self) -> None:
        _check_counts("HostCollectives", sync=self.sync, aligned=self.aligned, rooted=self.rooted)

    @property
    def sync_points(self) -> float:
        return sum(calls for size, calls in self.sync if size > 1)

    @property
    def calls(self) -> float:
        return sum(calls for rows in (self.sync, self.aligned, self.rooted)
                   for size, calls in rows if size > 1)


@dataclass(frozen=True)
class HostPrices:
    """The measured prices of one backend, read at one quantile of their spread."""

    backend: str = "mpi"
    quantile: str = "central"
    data: HostCollectiveData = HOST_COLLECTIVES

    def __post_init__(self) -> None:
        if self.quantile not in QUANTILES:
            raise ValueError(f"HostPrices.quantile={self.quantile!r}; expected one of "
                             f"{', '.join(QUANTILES)}")
        self.data.latency_s(self.backend, 2)       # raises naming the backend if unmeasured

    def collectives_s(self, colls: HostCollectives, host_work_s: float) -> float:
        """Seconds the iteration's host collectives add to its host critical path."""
        d, b, q = self.data, self.backend, self.quantile
        segment = host_work_s / max(1.0, colls.sync_points)
        total = sum(calls * (d.latency_s(b, n, quantile=q) + d.excess_s(b, n, segment, q))
                    for n, calls in colls.sync)
        total += sum(calls * d.latency_s(b, n, quantile=q) for n, calls in colls.aligned)
        total += sum(calls * d.latency_s(b, n, "bcast", quantile=q) for n, calls in colls.rooted)
        return total


@dataclass(frozen=True)
class IterationTime:
    """Where one iteration's time goes (seconds)."""

    gpu_s: float
    host_work_s: float
    collectives_s: float
    step_s: float

    @property
    def host_s(self) -> float:
        return self.host_work_s + self.collectives_s

    @property
    def bound(self) -> str:
        """``host`` when the host path sets the step, else ``gpu``."""
        return "host" if self.host_s > self.gpu_s else "gpu"


def iteration_time(gpu_s: float, host_work_s: float, collectives_s: float,
                   overlap: bool) -> IterationTime:
    """One iteration of an executor rank (see the module docstring); ``collectives_s`` is
    ``HostPrices.collectives_s`` of the iteration's collectives."""
    for name, v in (("gpu_s", gpu_s), ("host_work_s", host_work_s),
                    ("collectives_s", collectives_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
            raise ValueError(f"{name}={v!r} must be a finite number >= 0 (seconds)")
    host = host_work_s + collectives_s
    return IterationTime(gpu_s, host_work_s, collectives_s,
                         max(gpu_s, host) if overlap else gpu_s + host)
