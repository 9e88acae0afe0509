"""Why a what-if moves the step: the change of each role's mean step, term by term.

Every simulated step of a role is  gpu + host work + latency + wait - overlap  (``iteration``;
``overlap`` is what the overlap scheduler hides of the shorter side, plus, on a context
pipeline, what a full pipeline hides of its stages). The simulation sums each term over the
run (``SimResult.breakdown``: ``{role}_gpu``, ``_host_work``, ``_latency``, ``_wait``,
``_overlap``, ``_steps``), so the change of the mean step between two runs splits exactly into

    latency removed + wait removed + overlap regained + GPU time removed + host work removed

each the before's mean minus the after's (overlap: the after's minus the before's, as more
hidden time shortens the step).
"""

from __future__ import annotations

from dataclasses import dataclass

# (what the line says, breakdown term, sign: + when a smaller after shortens the step)
TERMS = (("latency removed", "latency", 1), ("wait removed", "wait", 1),
         ("overlap regained", "overlap", -1), ("GPU time removed", "gpu", 1),
         ("host work removed", "host_work", 1))
ROLES = (("gen", "generation"), ("ctx", "prefill"))


@dataclass(frozen=True)
class StepDelta:
    """One role's mean step before and after (seconds) and the terms that make up the
    change (seconds per step; they sum to before - after)."""

    role: str
    before_s: float
    after_s: float
    terms: tuple[tuple[str, float], ...]

    def line(self) -> str:
        name = dict(ROLES)[self.role]
        delta = self.before_s - self.after_s
        parts = ", ".join(f"{label} {v * 1e3:+.3f} ms" for label, v in self.terms)
        return (f"mean {name} step {self.before_s * 1e3:.3f} -> {self.after_s * 1e3:.3f} ms "
                f"({-delta * 1e3:+.3f} ms): {parts}")

    def to_dict(self) -> dict:
        return {"role": self.role, "before_s": self.before_s, "after_s": self.after_s,
                "terms_s": dict(self.terms)}


def mean_terms(breakdown: dict, role: str) -> dict[str, float] | None:
    """Seconds per step of each term of ``role`` (None when the role ran no step)."""
    steps = breakdown.get(f"{role}_steps", 0)
    if not steps:
        return None
    return {term: breakdown.get(f"{role}_{term}", 0.0) / steps for _, term, _ in TERMS}


def mean_step(terms: dict[str, float]) -> float:
    return terms["gpu"] + terms["host_work"] + terms["latency"] + terms["wait"] \
        - terms["overlap"]


def step_deltas(before: dict, after: dict) -> list[StepDelta]:
    """Per role that stepped in both runs: the change of its mean step, term by term."""
    out = []
    for role, _ in ROLES:
        b, a = mean_terms(before, role), mean_terms(after, role)
        if b is None or a is None:
            continue
        out.append(StepDelta(role, mean_step(b), mean_step(a), tuple(
            (label, sign * (b[term] - a[term])) for label, term, sign in TERMS)))
    return out
