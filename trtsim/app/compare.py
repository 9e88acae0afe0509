"""trtsim.compare: two runs side by side, Before / After / Delta, as a performance PR shows."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Comparison:
    """``before`` and ``after`` metrics (same names), and the change in percent."""

    before: dict
    after: dict
    labels: tuple[str, str] = ("before", "after")

    @property
    def delta_pct(self) -> dict:
        out = {}
        for k, b in self.before.items():
            a = self.after.get(k)
            if isinstance(b, (int, float)) and isinstance(a, (int, float)) and b:
                out[k] = (a - b) / abs(b) * 100.0
        return out

    def table(self) -> str:
        keys = [k for k in self.before if k in self.after]
        width = max([len(k) for k in keys] + [6])
        head = f"{'metric':<{width}}  {'Before':>12}  {'After':>12}  {'Δ':>8}"
        lines = [head, "-" * len(head)]
        delta = self.delta_pct
        for k in keys:
            b, a = self.before[k], self.after[k]
            d = f"{delta[k]:+.1f}%" if k in delta else ""
            lines.append(f"{k:<{width}}  {_num(b):>12}  {_num(a):>12}  {d:>8}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"before": self.before, "after": self.after, "delta_pct": self.delta_pct}


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _numeric(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if isinstance(v, (int, float))
            and not isinstance(v, bool)}


def comparison(before, after) -> Comparison:
    """Every numeric metric of two finished runs, side by side."""
    return Comparison(_numeric(before.metrics), _numeric(after.metrics))


def compare(a, b=None, set_a: dict | None = None, set_b: dict | None = None,
            progress=None) -> Comparison:
    """Run ``a`` with ``set_a`` and ``b`` (default: ``a`` again) with ``set_b``; compare every
    numeric metric."""
    from ..jobs.dispatch import run_any
    before = run_any(a, set_a, progress)
    after = run_any(b if b is not None else a, set_b, progress)
    return comparison(before, after)
