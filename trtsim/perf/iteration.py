"""One executor iteration: GPU-bound or host-bound, with or without the overlap scheduler.

The host thread of each rank runs the iteration's Python work (scheduling, input preparation,
request bookkeeping) and enters every host-object collective in turn, so those collectives sit
on the host's critical path:

    host  = host_work + latency + wait
    step  = gpu + host - overlap,  overlap = min(gpu, host) with the overlap scheduler (TRT-LLM's
            default: the host prepares and launches iteration N+1 while the GPU runs N), else 0

``latency``: every host collective's own price (``host_collectives``), call by call. ``wait``:
a gather that follows host work (``sync``) makes every member wait for the slowest one; the
members' host times differ by the spread of the whole iteration's host work, so an iteration
that re-syncs pays that wait once, whatever the number of its sync gathers (the first finds
the members apart, the rest find them together): expected max of n draws over the largest
group that re-syncs, times the chance that the iteration re-syncs at all (a rate below one
call per iteration: that share of the iterations). A gather entered right after another of the
same call (``aligned``) and a rooted call (a broadcast, a gather to one root: nobody waits for
the others) add their latency only. So a skipped gather removes its latency and the re-syncs it
forced, and nothing else: the spread stays in the host work of every rank.
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


def _add(a: Counts, b: Counts, times: float) -> Counts:
    out = dict(a)
    for size, calls in b:
        out[size] = out.get(size, 0.0) + calls * times
    return tuple(sorted((s, c) for s, c in out.items() if c))


@dataclass(frozen=True)
class HostCollectives:
    """The host-object collectives one rank enters per iteration, by kind and group size."""

    sync: Counts = ()         # gathers after host work: latency + a re-sync of the members
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

    def plus(self, other: "HostCollectives", times: float = 1.0) -> "HostCollectives":
        """These calls and ``times`` x ``other``'s (an iteration with request events)."""
        if not times:
            return self
        return HostCollectives(_add(self.sync, other.sync, times),
                               _add(self.aligned, other.aligned, times),
                               _add(self.rooted, other.rooted, times))


@dataclass(frozen=True)
class HostPath:
    """What an iteration's host collectives add to its host critical path (seconds)."""

    latency_s: float = 0.0
    wait_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.latency_s + self.wait_s


@dataclass(frozen=True)
class HostPrices:
    """The measured prices of one backend, read at one quantile of their uncertainty."""

    backend: str = "mpi"
    quantile: str = "central"
    data: HostCollectiveData = HOST_COLLECTIVES

    def __post_init__(self) -> None:
        if self.quantile not in QUANTILES:
            raise ValueError(f"HostPrices.quantile={self.quantile!r}; expected one of "
                             f"{', '.join(QUANTILES)}")
        self.data.latency_s(self.backend, 2)       # raises naming the backend if unmeasured

    def host_path(self, colls: HostCollectives, host_work_s: float) -> HostPath:
        """The latency of every call and the iteration's one wait for the slowest member."""
        d, b, q = self.data, self.backend, self.quantile
        latency = sum(calls * d.latency_s(b, n, quantile=q)
                      for n, calls in colls.sync + colls.aligned)
        latency += sum(calls * d.latency_s(b, n, "bcast", quantile=q) for n, calls in colls.rooted)
        groups = [n for n, calls in colls.sync if n > 1 and calls > 0]
        wait = min(1.0, colls.sync_points) * d.wait_s(b, max(groups), host_work_s, q) \
            if groups else 0.0
        return HostPath(latency, wait)

    def collectives_s(self, colls: HostCollectives, host_work_s: float) -> float:
        """Seconds the iteration's host collectives add to its host critical path."""
        return self.host_path(colls, host_work_s).total_s


@dataclass(frozen=True)
class IterationTime:
    """Where one iteration's time goes (seconds): step = gpu + host - overlap."""

    gpu_s: float
    host_work_s: float
    latency_s: float
    wait_s: float
    overlap_s: float
    step_s: float

    @property
    def collectives_s(self) -> float:
        return self.latency_s + self.wait_s

    @property
    def host_s(self) -> float:
        return self.host_work_s + self.collectives_s

    @property
    def bound(self) -> str:
        """``host`` when the host path sets the step, else ``gpu``."""
        return "host" if self.host_s > self.gpu_s else "gpu"


def iteration_time(gpu_s: float, host_work_s: float, path: HostPath | float,
                   overlap: bool) -> IterationTime:
    """One iteration of an executor rank (see the module docstring); ``path`` is
    ``HostPrices.host_path`` of the iteration's collectives (a number: latency alone)."""
    path = path if isinstance(path, HostPath) else HostPath(path)
    for name, v in (("gpu_s", gpu_s), ("host_work_s", host_work_s),
                    ("latency_s", path.latency_s), ("wait_s", path.wait_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < float("inf"):
            raise ValueError(f"{name}={v!r} must be a finite number >= 0 (seconds)")
    host = host_work_s + path.total_s
    hidden = min(gpu_s, host) if overlap else 0.0
    return IterationTime(gpu_s, host_work_s, path.latency_s, path.wait_s, hidden,
                         gpu_s + host - hidden)
