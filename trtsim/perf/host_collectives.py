"""Host-object collectives on a host-bound critical path, priced from a measurement.

A collective among n ranks, entered after host work w by every member, costs one rank

    latency(n)      the call itself when every member arrives together (measured after a barrier)
  + excess(n, w)    the wait for the slowest member: E[max_j w_j] - E[w] (measured per iteration
                    of a host-bound loop of n ranks; where the loop did not run with n ranks,
                    from the measured distribution of w by order statistics, i.i.d. members)

The figures are what ``benchmarks/bench_host_gather.py`` writes (``data/host_gather.json``;
swapping in a new run changes nothing but numbers). Each price is read at one of three
``quantiles`` of the measured spread: ``low`` (p10), ``central`` (the mean: what a long run
accumulates) and ``high`` (p90). Between measured rank counts latency is interpolated linearly
(extrapolated from the last two beyond them); between measured work sizes the excess is
interpolated linearly from (0, 0) and held at the largest measured work beyond it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources

QUANTILES = ("low", "central", "high")


@dataclass(frozen=True)
class Spread:
    """One measured price (seconds): p10, mean, p90."""

    low: float
    central: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "central", "high"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                raise ValueError(f"Spread.{name}={v!r} must be a finite number >= 0 (seconds)")
        if self.low > self.high:
            raise ValueError(f"Spread.low={self.low!r} exceeds Spread.high={self.high!r}")

    @classmethod
    def from_row(cls, row: dict) -> "Spread":
        """From a benchmark row in microseconds (p10_us, mean_us or p50_us, p90_us)."""
        central = row.get("mean_us", row["p50_us"]) * 1e-6
        return cls(min(row["p10_us"] * 1e-6, central), central,
                   max(row["p90_us"] * 1e-6, central))

    def at(self, quantile: str) -> float:
        if quantile not in QUANTILES:
            raise ValueError(f"quantile={quantile!r}; expected one of {', '.join(QUANTILES)}")
        return getattr(self, quantile)


@dataclass(frozen=True)
class LatencyPoint:
    """A collective's latency among ``ranks`` members of one backend, for one payload."""

    backend: str
    ranks: int
    collective: str          # allgather | bcast
    payload: str             # ids | outcome_empty | outcome
    spread: Spread
    source: str = ""


@dataclass(frozen=True)
class LoopPoint:
    """The host-bound loop of ``ranks`` members doing ``work_s`` each per iteration."""

    backend: str
    ranks: int
    work_s: float                          # median measured work per rank-iteration
    excess: Spread                         # slowest member minus the mean member, per iteration
    work_quantiles_s: tuple[float, ...]    # 101 quantiles of the work per rank-iteration
    source: str = ""

    def __post_init__(self) -> None:
        if len(self.work_quantiles_s) < 2 or list(self.work_quantiles_s) != sorted(
                self.work_quantiles_s):
            raise ValueError(f"LoopPoint.work_quantiles_s={self.work_quantiles_s!r} must be "
                             f"ascending quantiles")


def expected_excess(quantiles: tuple[float, ...], n: int) -> float:
    """E[max of n i.i.d. draws] - E[draw] for the distribution given by equal-weight points."""
    xs = sorted(quantiles)
    m = len(xs)
    top = sum(x * ((k + 1) ** n - k ** n) for k, x in enumerate(xs)) / m ** n
    return top - sum(xs) / m


def _interp(points: list[tuple[float, float]], x: float, extrapolate: bool) -> float:
    """Piecewise-linear y(x) through ``points``; beyond them linear from the two end points
    (``extrapolate``) or held at the end value."""
    pts = sorted(dict(points).items())
    if len(pts) == 1:
        return pts[0][1]
    if x <= pts[0][0] or x >= pts[-1][0]:
        (x0, y0), (x1, y1) = pts[:2] if x <= pts[0][0] else pts[-2:]
        if not extrapolate:
            return y0 if x <= pts[0][0] else y1
    else:
        (x0, y0), (x1, y1) = next((a, b) for a, b in zip(pts, pts[1:]) if a[0] <= x <= b[0])
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


@dataclass(frozen=True)
class HostCollectiveData:
    """A benchmark run's latency and loop points, with what it was measured on."""

    latency: tuple[LatencyPoint, ...]
    loops: tuple[LoopPoint, ...]
    source: str = ""

    def __post_init__(self) -> None:
        if not self.latency:
            raise ValueError("HostCollectiveData.latency=() holds no measured point")

    @classmethod
    def from_dict(cls, data: dict) -> "HostCollectiveData":
        """From the JSON ``benchmarks/bench_host_gather.py`` writes."""
        lat = tuple(LatencyPoint(r["backend"], int(r["ranks"]), r["collective"], r["payload"],
                                 Spread.from_row(r), r.get("source", "")) for r in data["latency"])
        loops = tuple(LoopPoint(j["backend"], int(j["ranks"]), j["work"]["p50_us"] * 1e-6,
                                Spread.from_row(j["excess"]),
                                tuple(q * 1e-6 for q in j["work_quantiles_us"]),
                                j.get("source", "")) for j in data.get("jitter", ()))
        info = data.get("info", {})
        return cls(lat, loops, info.get("source") or
                   f"{info.get('command', '?')} on {info.get('cpus', '?')} CPUs "
                   f"({info.get('cpu_model', '?')}), {info.get('date', '?')}")

    def latency_s(self, backend: str, n: int, collective: str = "allgather",
                  payload: str = "ids", quantile: str = "central") -> float:
        """One call's latency among ``n`` ranks; a collective or payload the run lacks falls
        back to the allgather of ``ids``."""
        if n <= 1:
            return 0.0
        for coll, pay in ((collective, payload), (collective, "ids"), ("allgather", "ids")):
            pts = [(p.ranks, p.spread.at(quantile)) for p in self.latency
                   if (p.backend, p.collective, p.payload) == (backend, coll, pay)]
            if pts:
                return max(0.0, _interp(pts, n, extrapolate=True))
        raise ValueError(f"backend={backend!r}: no measured latency (known: "
                         f"{', '.join(sorted({p.backend for p in self.latency}))})")

    def excess_s(self, backend: str, n: int, work_s: float, quantile: str = "central") -> float:
        """The wait for the slowest of ``n`` members after ``work_s`` of host work each."""
        if n <= 1 or work_s <= 0 or not self.loops:
            return 0.0
        own = [p for p in self.loops if p.backend == backend] or list(self.loops)
        measured = min({p.ranks for p in own}, key=lambda r: (abs(r - n), -r))
        rows = [p for p in own if p.ranks == measured]
        value = _interp([(0.0, 0.0)] + [(p.work_s, p.excess.at(quantile)) for p in rows],
                        work_s, extrapolate=False)
        if measured == n:
            return value
        nearest = min(rows, key=lambda p: abs(p.work_s - work_s))
        base = expected_excess(nearest.work_quantiles_s, measured)
        return value * expected_excess(nearest.work_quantiles_s, n) / base if base > 0 else 0.0


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
