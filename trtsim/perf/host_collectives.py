"""Host-object collectives on a host-bound critical path, priced from a measurement.

A host collective among n ranks costs one rank

    latency(n)      the call itself when every member arrives together (measured after a
                    barrier), paid by every call
    wait(n, W)      the wait for the slowest member, paid once per iteration that re-syncs the
                    members: W x (E[max of n draws of X] - 1), where W is the iteration's host
                    work and X a rank's host time for a fixed unit of work relative to its mean
                    (the measured per-rank distribution: spread / work)

The figures are what ``benchmarks/bench_host_gather.py`` writes (``data/host_gather.json``;
swapping in a new run changes nothing but numbers): ranks pinned one per physical core, GC
frozen, each rank count launched several times. Each price is read at one of three
``quantiles`` of the measurement's uncertainty: ``central`` (latency: the mean over every call;
wait: the order statistic of the distribution pooled over the runs), ``low`` and ``high`` (the
lowest and highest of the same figure computed run by run). Between measured rank counts
latency is interpolated linearly (the central figure extrapolated from the last two beyond
them, its band scaled like the nearest measured point's); the wait draws n times from the
distribution measured at the rank count nearest n, for the unit of work nearest W (by ratio),
its relative spread held for W.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources

QUANTILES = ("low", "central", "high")


@dataclass(frozen=True)
class Spread:
    """One measured price: the central figure and the lowest and highest run's."""

    low: float
    central: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "central", "high"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise ValueError(f"Spread.{name}={v!r} must be a finite number >= 0")
        if not self.low <= self.central <= self.high:
            raise ValueError(f"Spread({self.low!r}, {self.central!r}, {self.high!r}) must hold "
                             f"low <= central <= high")

    @classmethod
    def of_runs(cls, central: float, per_run: list[float]) -> "Spread":
        """``central`` with the runs' lowest and highest figures around it."""
        return cls(min([central, *per_run]), central, max([central, *per_run]))

    def at(self, quantile: str) -> float:
        if quantile not in QUANTILES:
            raise ValueError(f"quantile={quantile!r}; expected one of {', '.join(QUANTILES)}")
        return getattr(self, quantile)


@dataclass(frozen=True)
class LatencyPoint:
    """A collective's latency (seconds) among ``ranks`` members of one backend, one payload."""

    backend: str
    ranks: int
    collective: str          # allgather | bcast
    payload: str             # ids | outcome_empty | outcome
    spread: Spread


@dataclass(frozen=True)
class JitterPoint:
    """The per-rank host time of a fixed unit of work, relative to its mean, run by run."""

    backend: str
    ranks: int
    work_s: float                              # the unit's median measured time
    runs: tuple[tuple[float, ...], ...]        # per launch: quantiles of work / mean work

    def __post_init__(self) -> None:
        if not self.runs or any(len(q) < 2 or list(q) != sorted(q) for q in self.runs):
            raise ValueError(f"JitterPoint.runs of {self.ranks} ranks at {self.work_s:.4g} s "
                             f"must hold ascending quantiles for every run")

    def relative_wait(self, n: int) -> Spread:
        """E[max of n draws] - 1: pooled over the runs (central) and run by run."""
        pooled = tuple(sorted(q for run in self.runs for q in run))
        return Spread.of_runs(expected_excess(pooled, n),
                              [expected_excess(run, n) for run in self.runs])


def expected_excess(quantiles: tuple[float, ...], n: int) -> float:
    """E[max of n i.i.d. draws] - E[draw] for the distribution given by equal-weight points."""
    xs = sorted(quantiles)
    m = len(xs)
    top = sum(x * (((k + 1) / m) ** n - (k / m) ** n) for k, x in enumerate(xs))
    return max(0.0, top - sum(xs) / m)


def _interp(points: list[tuple[float, float]], x: float) -> float:
    """Piecewise-linear y(x) through ``points``, linear from the two end points beyond them."""
    pts = sorted(dict(points).items())
    if len(pts) == 1:
        return pts[0][1]
    if x <= pts[0][0]:
        (x0, y0), (x1, y1) = pts[:2]
    elif x >= pts[-1][0]:
        (x0, y0), (x1, y1) = pts[-2:]
    else:
        (x0, y0), (x1, y1) = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= x <= b[0])
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _priced(row: dict, where: str) -> dict:
    """A row the prices may use: measured on pinned ranks, none oversubscribed."""
    if row.get("oversubscribed") or not row.get("pinned", False):
        what = "oversubscribed" if row.get("oversubscribed") else "unpinned"
        raise ValueError(f"host_gather.json: {where} row of {row.get('ranks')} "
                         f"{row.get('backend')} ranks is {what}: such runs belong under "
                         f"'excluded', never among the prices")
    return row


@dataclass(frozen=True)
class HostCollectiveData:
    """A benchmark run's latency and jitter points, with what it was measured on."""

    latency: tuple[LatencyPoint, ...]
    jitter: tuple[JitterPoint, ...]
    source: str = ""
    excluded: tuple[str, ...] = ()      # why each measured launch is not among the prices

    def __post_init__(self) -> None:
        if not self.latency:
            raise ValueError("HostCollectiveData.latency=() holds no measured point")

    @classmethod
    def from_dict(cls, data: dict) -> "HostCollectiveData":
        """From the JSON ``benchmarks/bench_host_gather.py`` writes (schema 2)."""
        if data.get("schema") != 2:
            raise ValueError(f"host_gather.json: schema={data.get('schema')!r}; expected 2 (run "
                             f"benchmarks/bench_host_gather.py again)")
        groups: dict[tuple, list[dict]] = {}
        for row in data["latency"]:
            groups.setdefault((row["backend"], int(row["ranks"]), row["collective"],
                               row["payload"]), []).append(_priced(row, "latency"))
        latency = tuple(LatencyPoint(*key, _latency_spread(rows)) for key, rows in groups.items())
        loops: dict[tuple, list[dict]] = {}
        for row in data.get("jitter", ()):
            loops.setdefault((row["backend"], int(row["ranks"]), row["work_us_target"]),
                             []).append(_priced(row, "jitter"))
        jitter = tuple(JitterPoint(backend, ranks, _median([r["work"]["p50_us"] for r in rows])
                                   * 1e-6, tuple(tuple(r["relative_quantiles"]) for r in rows))
                       for (backend, ranks, _), rows in loops.items())
        info = data.get("info", {})
        excluded = tuple(sorted({f"{r['backend']} {r['ranks']} ranks, run {r.get('run', 0)}: "
                                 f"{r.get('why', '')}" for r in data.get("excluded", ())}))
        return cls(latency, jitter, info.get("source") or
                   f"{info.get('command', '?')} on {info.get('cpus', '?')} CPUs "
                   f"({info.get('cpu_model', '?')}), {info.get('date', '?')}", excluded)

    def latency_s(self, backend: str, n: int, collective: str = "allgather",
                  payload: str = "ids", quantile: str = "central") -> float:
        """One call's latency among ``n`` ranks; a collective or payload the run lacks falls
        back to the allgather of ``ids``."""
        if n <= 1:
            return 0.0
        for coll, pay in ((collective, payload), (collective, "ids"), ("allgather", "ids")):
            pts = [p for p in self.latency
                   if (p.backend, p.collective, p.payload) == (backend, coll, pay)]
            if not pts:
                continue
            inside = min(p.ranks for p in pts) <= n <= max(p.ranks for p in pts)
            if inside or quantile == "central":
                return max(0.0, _interp([(p.ranks, p.spread.at(quantile)) for p in pts], n))
            # beyond the measured counts: the central trend, scaled like the nearest point's
            # band (extrapolating each end separately could cross them)
            end = min(pts, key=lambda p: abs(p.ranks - n)).spread
            scale = end.at(quantile) / end.central if end.central else 1.0
            return max(0.0, _interp([(p.ranks, p.spread.central) for p in pts], n)) * scale
        raise ValueError(f"backend={backend!r}: no measured latency (known: "
                         f"{', '.join(sorted({p.backend for p in self.latency}))})")

    def jitter_point(self, backend: str, n: int, work_s: float) -> JitterPoint | None:
        """The distribution the wait draws from: this backend's if measured (else any: the
        spread is the host's work, not the collective's), at the rank count nearest ``n``,
        for the unit nearest ``work_s`` by ratio."""
        own = [p for p in self.jitter if p.backend == backend] or list(self.jitter)
        if not own:
            return None
        ranks = min({p.ranks for p in own}, key=lambda r: (abs(r - n), -r))
        return min((p for p in own if p.ranks == ranks),
                   key=lambda p: abs(math.log(p.work_s / work_s)))

    def wait_s(self, backend: str, n: int, work_s: float, quantile: str = "central") -> float:
        """The wait for the slowest of ``n`` members after ``work_s`` of host work each."""
        point = self.jitter_point(backend, n, work_s) if n > 1 and work_s > 0 else None
        return 0.0 if point is None else work_s * point.relative_wait(n).at(quantile)


def _median(values: list[float]) -> float:
    s = sorted(values)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def _latency_spread(rows: list[dict]) -> Spread:
    """Seconds: the mean over every call of every run, and the runs' lowest and highest means."""
    calls = sum(r["samples"] for r in rows)
    central = sum(r["mean_us"] * r["samples"] for r in rows) / calls
    return Spread.of_runs(central * 1e-6, [r["mean_us"] * 1e-6 for r in rows])


def load_host_collectives(path: str | None = None) -> HostCollectiveData:
    """The measured figures: ``path``, or the run shipped in ``trtsim/perf/data/host_gather.json``
    (what ``benchmarks/bench_host_gather.py --json`` writes)."""
    if path is None:
        text = resources.files(__package__).joinpath("data", "host_gather.json").read_text()
    else:
        with open(path) as f:
            text = f.read()
    return HostCollectiveData.from_dict(json.loads(text))


HOST_COLLECTIVES = load_host_collectives()
