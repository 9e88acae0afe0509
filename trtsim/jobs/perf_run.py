"""Perf runs: count the control plane on trtsim's executor, then simulate the benchmark three
times, with every host price at the low, central and high end of its measurement's
uncertainty (``perf.host_collectives``): the prediction and its band."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from ..perf.host_collectives import HOST_COLLECTIVES, QUANTILES
from ..perf.serving_sim import SimResult, simulate
from ..perf.step_terms import mean_step, mean_terms
from ..scenario.perf import PerfScenario, load_perf
from ..timeline.trace import server_trace
from .control_plane import measure_control_plane

# Steps a perf trace keeps by default, shared evenly by the servers: about 6 MB of JSON (a
# step is three slices of about 105 bytes). The 5.3 benchmark simulates 300,000 steps (94 MB).
TRACE_STEPS = 20_000


@dataclass
class PerfResult:
    """A perf run: predicted metrics, where the time went, the census it priced."""

    scenario: PerfScenario
    metrics: dict
    breakdown: dict
    control: object
    wall_s: float
    sim: SimResult | None = None
    by_quantile: dict = field(default_factory=dict)   # low/central/high -> metrics
    verdict: str = "ok"
    error: None = None

    census = None                      # a perf run prices a census; it does not keep one
    price_source = HOST_COLLECTIVES.source

    @property
    def holds(self) -> bool:
        return True

    def trace_events(self, max_steps: int | None = TRACE_STEPS) -> dict:
        """The simulated servers' steps as a Perfetto trace, each step split into its
        control plane (the host collectives counted on the executor, priced) and the rest
        (forward pass, transfers' polling): the part a control-plane change moves. A server
        with more than its share of ``max_steps`` shows every k-th step, and says so in its
        label (``None``: every step)."""
        shown, strides = _sample_steps(self.sim.events, max_steps)
        steps = {"prefill": ("ctx", sum(e[0].startswith("ctx") for e in self.sim.events)),
                 "generation": ("gen", sum(e[0].startswith("gen") for e in self.sim.events))}
        b = self.breakdown
        split = {}
        for kind, (role, n) in steps.items():
            if n:
                # The generation step pays the same control plane every step (the sum over
                # n steps / n is exact); a prefill's also grows with its batch: its mean.
                split[kind] = (b.get(f"{role}_control_plane", 0.0) / n,
                               b.get(f"{role}_worker_overhead", 0.0) / n)

        def parts(server, kind, seconds):
            if kind not in split:
                return ()
            control, overhead = split[kind]
            out = [("control plane", control, {})]
            if overhead:
                out.append(("worker overhead", overhead, {}))
            out.append(("forward", max(0.0, seconds - control - overhead), {}))
            return out

        labels = {role: f"control plane per rank-iteration: {_calls(getattr(self.control, role))}"
                        f"; per request: {_calls(getattr(self.control, role + '_per_request'))}"
                  for role in ("ctx", "gen")}

        def label(server):
            text = labels.get(server[:3], "")
            stride, total = strides[server]
            if stride > 1:
                text += f"; 1 step in {stride} of its {total:,} shown"
            return text
        return server_trace(shown, parts, label)

    @property
    def band(self) -> dict[str, tuple[float, float]]:
        """metric -> (lowest, highest) over the three price quantiles."""
        runs = [self.by_quantile[q] for q in QUANTILES if q in self.by_quantile] or [self.metrics]
        return {k: (min(r[k] for r in runs), max(r[k] for r in runs)) for k in self.metrics
                if isinstance(self.metrics[k], (int, float))}

    def comparison(self) -> list[tuple[str, float, float, float]]:
        """(metric, predicted, measured, relative error) for every measured metric."""
        rows = []
        for k, measured in self.scenario.measured.items():
            if k in self.metrics and measured:
                p = self.metrics[k]
                rows.append((k, p, measured, (p - measured) / measured))
        return rows

    def step_summary(self) -> str:
        """Each role's mean step and its terms (step = gpu + host work + latency + wait -
        overlap), and how many generation steps were host-bound."""
        lines = []
        for role, name in (("gen", "generation"), ("ctx", "prefill")):
            t = mean_terms(self.breakdown, role)
            if t is None:
                continue
            n = int(self.breakdown[f"{role}_steps"])
            lines.append(f"{name} step (mean over {n:,}): {mean_step(t) * 1e3:.3f} ms = gpu "
                         f"{t['gpu'] * 1e3:.3f} + host work {t['host_work'] * 1e3:.3f} + "
                         f"latency {t['latency'] * 1e3:.3f} + wait {t['wait'] * 1e3:.3f} - "
                         f"overlap {t['overlap'] * 1e3:.3f} ms")
        b = self.breakdown
        if b.get("gen_steps"):
            lines[0] += f"; host-bound {b.get('gen_host_bound_steps', 0) / b['gen_steps']:.0%}"
        return "\n".join(lines)

    def summary(self) -> str:
        c = self.scenario.config
        lines = [f"{self.scenario.name}: {c.model} on {c.hardware}, ctx {c.ctx.servers}x"
                 f"({_describe(c.ctx)}), gen {c.gen.servers}x({_describe(c.gen)})"
                 f", sticky_skip {self.scenario.sticky_skip}, runtime {c.runtime}",
                 f"control plane counted on {self.control.source}; calls per forward "
                 f"rank-iteration and per request:", self.control.table(),
                 f"host collectives priced from {c.host_backend}: {self.price_source}",
                 self.step_summary()]
        width = max(len(k) for k in self.metrics)
        band = self.band
        for k, v in self.metrics.items():
            lo, hi = band.get(k, (v, v))
            lines.append(f"  {k:<{width}}  {v:12.4g}   [{lo:.4g}, {hi:.4g}]")
        rows = self.comparison()
        if rows:
            lines.append("against the measured row (error at the band's ends in brackets):")
            for k, p, m, e in rows:
                lo, hi = band[k]
                lines.append(f"  {k:<{width}}  predicted {p:10.4g}  measured {m:10.4g}  "
                             f"error {e:+.1%} [{(lo - m) / m:+.1%}, {(hi - m) / m:+.1%}]")
        lines.append(f"simulated in {self.wall_s:.2f} s")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"kind": "perf", "scenario": self.scenario.name, "source": self.scenario.source,
                "verdict": self.verdict, "holds": True, "metrics": self.metrics,
                "control_plane": {
                    role: [{"group_size": size, "meet": meet, per: n}
                           for attr, per in ((role, "calls_per_rank_iteration"),
                                             (f"{role}_per_request", "calls_per_request"))
                           for meet in ("sync", "aligned", "rooted")
                           for size, n in getattr(getattr(self.control, attr), meet)]
                    for role in ("ctx", "gen")},
                "band": {k: list(v) for k, v in self.band.items()},
                "breakdown": self.breakdown, "comparison": [
                    {"metric": k, "predicted": p, "measured": m, "relative_error": e}
                    for k, p, m, e in self.comparison()], "wall_s": self.wall_s}


def run_perf(source, overrides: dict | None = None) -> PerfResult:
    """Count the control plane on the executor, then simulate the benchmark."""
    scen = source if isinstance(source, PerfScenario) and not overrides else load_perf(
        source.raw if isinstance(source, PerfScenario) else source, overrides)
    t0 = time.perf_counter()
    c = scen.config
    control = measure_control_plane(c.ctx, c.gen, scen.transceiver, scen.executor.version)
    sims = {q: simulate(replace(c, control=control, price_quantile=q)) for q in QUANTILES}
    sim = sims["central"]
    return PerfResult(scen, sim.metrics, sim.breakdown, control, time.perf_counter() - t0, sim,
                      {q: r.metrics for q, r in sims.items()})


def _sample_steps(events: list[tuple], max_steps: int | None) -> tuple[list, dict]:
    """Every k-th step of each server whose steps exceed its even share of ``max_steps``
    (the steps kept are whole and at their true times), and server -> (k, its steps)."""
    by_server: dict[str, list] = {}
    for e in events:
        by_server.setdefault(e[0], []).append(e)
    share = max(1, max_steps // max(1, len(by_server))) if max_steps else None
    strides = {s: (-(-len(evs) // share) if share else 1, len(evs)) for s, evs in by_server.items()}
    kept = [e for s, evs in by_server.items() for e in evs[::strides[s][0]]]
    return kept, strides


def _calls(collectives) -> str:
    """``sync: 5.97 calls in groups of 4`` for each way of meeting, group size and count."""
    return ", ".join(f"{meet}: {n:.3g} calls in groups of {size}"
                     for meet in ("sync", "aligned", "rooted")
                     for size, n in getattr(collectives, meet)) or "no calls"


def _describe(inst) -> str:
    lay = inst.layout
    return f"tp{lay.tp_size} pp{lay.pp_size}{' adp' if lay.enable_attention_dp else ''}"
