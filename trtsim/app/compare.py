"""trtsim.compare: two runs side by side, Before / After / Delta, as a performance PR shows.

A perf run also carries its metrics at the low and high ends of the measured host prices
(``PerfResult.by_quantile``); the comparison then shows each side's band and the band of the
change, pairing like with like (both runs priced on the same measured machine: the low-price
change is the before and after at low prices), and why the change happens: each role's mean
step before and after, split into the terms that make up the change (latency removed, wait
removed, overlap regained, GPU time and host work removed; ``perf.step_terms``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..perf.step_terms import StepDelta, step_deltas

_ENDS = ("low", "central", "high")


def _pct(b, a) -> float | None:
    if isinstance(b, (int, float)) and isinstance(a, (int, float)) and b:
        return (a - b) / abs(b) * 100.0
    return None


@dataclass
class Comparison:
    """``before`` and ``after`` metrics (same names), the change in percent, and, for perf
    runs, the metrics at each end of the price spread (``*_by``: quantile -> metrics)."""

    before: dict
    after: dict
    labels: tuple[str, str] = ("before", "after")
    before_by: dict = field(default_factory=dict)
    after_by: dict = field(default_factory=dict)
    terms: list[StepDelta] = field(default_factory=list)    # perf runs: why the step moved

    @property
    def delta_pct(self) -> dict:
        out = {}
        for k, b in self.before.items():
            d = _pct(b, self.after.get(k))
            if d is not None:
                out[k] = d
        return out

    @property
    def band(self) -> dict:
        """{before, after, delta_pct}: metric -> (lowest, highest) over the price quantiles;
        empty when the runs carry no quantiles."""
        ends = [q for q in _ENDS if q in self.before_by and q in self.after_by]
        if not ends:
            return {}
        out: dict = {"before": {}, "after": {}, "delta_pct": {}}
        for k in self.delta_pct:
            b = [self.before_by[q][k] for q in ends]
            a = [self.after_by[q][k] for q in ends]
            d = [_pct(x, y) for x, y in zip(b, a)]
            out["before"][k], out["after"][k] = (min(b), max(b)), (min(a), max(a))
            if None not in d:
                out["delta_pct"][k] = (min(d), max(d))
        return out

    def table(self) -> str:
        keys = [k for k in self.before if k in self.after]
        width = max([len(k) for k in keys] + [6])
        band = self.band
        head = f"{'metric':<{width}}  {'Before':>12}  {'After':>12}  {'Δ':>8}"
        if band:
            head += f"  {'Δ band':>18}  {'Before band':>22}  {'After band':>22}"
        lines = [head, "-" * len(head)]
        delta = self.delta_pct
        for k in keys:
            b, a = self.before[k], self.after[k]
            d = f"{delta[k]:+.1f}%" if k in delta else ""
            line = f"{k:<{width}}  {_num(b):>12}  {_num(a):>12}  {d:>8}"
            if band and k in band["delta_pct"]:
                lo, hi = band["delta_pct"][k]
                line += f"  {f'[{lo:+.1f}%, {hi:+.1f}%]':>18}  {_range(band['before'][k]):>22}" \
                        f"  {_range(band['after'][k]):>22}"
            lines.append(line)
        if band:
            lines.append("bands: the host prices at the low and high end of their measurement's "
                         "uncertainty")
        if self.terms:
            lines.append("why, at central prices (each role's mean step; the terms sum to its "
                         "change):")
            lines += [f"  {d.line()}" for d in self.terms]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        out = {"before": self.before, "after": self.after, "delta_pct": self.delta_pct}
        if self.band:
            out["band"] = {side: {k: list(v) for k, v in rows.items()}
                           for side, rows in self.band.items()}
        if self.terms:
            out["step_terms"] = [d.to_dict() for d in self.terms]
        return out


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _range(pair) -> str:
    return f"[{_num(float(pair[0]))}, {_num(float(pair[1]))}]"


def _numeric(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float))
            and not isinstance(v, bool)}


def comparison(before, after) -> Comparison:
    """Every numeric metric of two finished runs, side by side (with the bands of perf runs,
    which carry their metrics at each end of the price spread)."""
    def ends(res) -> dict:
        return {q: _numeric(m) for q, m in getattr(res, "by_quantile", {}).items()}
    parts = [getattr(res, "breakdown", None) for res in (before, after)]
    terms = step_deltas(*parts) if all(isinstance(p, dict) for p in parts) else []
    return Comparison(_numeric(before.metrics), _numeric(after.metrics),
                      before_by=ends(before), after_by=ends(after), terms=terms)


def _kind(scenario) -> str:
    from ..postmortem.replay import Replay
    from ..scenario.perf import PerfScenario
    return ("perf" if isinstance(scenario, PerfScenario)
            else "replay" if isinstance(scenario, Replay) else "functional")


def load_pair(a, b=None, set_a: dict | None = None, set_b: dict | None = None) -> tuple:
    """Both scenarios read and checked before either runs, ``b`` defaulting to ``a``: bad
    input fails at once, and so do two scenarios of different kinds (a perf prediction and a
    functional run share metric names, not meanings: ``completed`` of 1,024 simulated
    requests against 3 transferred ones is no change)."""
    from ..scenario.registry import load_any
    from ..scenario.schema import ScenarioError
    first = load_any(a, set_a)
    second = load_any(b if b is not None else a, set_b)
    if _kind(first) != _kind(second):
        raise ScenarioError(f"compare: {first.source} is a {_kind(first)} scenario and "
                            f"{second.source} a {_kind(second)} one; compare runs two "
                            "scenarios of one kind")
    return first, second


def compare(a, b=None, set_a: dict | None = None, set_b: dict | None = None,
            progress=None) -> Comparison:
    """Run ``a`` with ``set_a`` and ``b`` (default: ``a`` again) with ``set_b``; compare every
    numeric metric (and, for perf runs, their bands)."""
    from ..jobs.dispatch import run_any
    first, second = load_pair(a, b, set_a, set_b)
    return comparison(run_any(first, progress=progress), run_any(second, progress=progress))
