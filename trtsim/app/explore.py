"""trtsim.explore: search for a scenario variant that violates an invariant, shrink it to the
smallest one, and write it as a scenario that ``trtsim run`` replays to the same report.

Hypothesis drives the search (``hypothesis.find``): it draws overrides for the varied keys,
runs the scenario on the inproc backend, stops at the first violation and shrinks it toward
fewer ranks, fewer and shorter requests, seed 0 (the strategies in ``trtsim.strategies`` are
ordered that way). What counts as a violation is the hunt (``trtsim/app/hunt.py``): by default
the bug, a report or a transferred block that differs from its source, also for a scenario
that reproduces an incident.
"""

from __future__ import annotations

import copy
import random
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis.errors import NoSuchExample

from ..calls.errors import CollectiveError
from ..jobs.run import RunResult, run
from ..layout.topology import topologies, topology
from ..scenario.functional import ScenarioError, load_raw, resolve, set_dotted
from ..scenario.registry import kind_of
from ..strategies import by_size, overrides as override_strategy
from ..backends.counterexample import counterexample_path, report_header, write_counterexample
from .hunt import HUNTS, is_violation
from .output import writing


@dataclass
class ExploreResult:
    """What ``explore`` found."""

    found: bool
    scenario: dict | None               # the shrunk failing overrides (dotted keys)
    error: CollectiveError | None
    examples_run: int
    path: str | None = None
    result: RunResult | None = None
    wall_s: float = 0.0
    violations_seen: int = 0
    notes: list[str] = field(default_factory=list)

    requested: int = 0
    first_violation_at: int | None = None    # runs made when the first violation was seen
    hunt: str = "bug"                        # what counted as a violation (HUNTS)

    def summary(self) -> str:
        what = f"explored {self.examples_run} variants ({self.requested} requested"
        if self.found and self.first_violation_at is not None:
            what += (f"; the first violation at variant {self.first_violation_at}, then "
                     f"{self.examples_run - self.first_violation_at} runs shrinking it")
        what += f") in {self.wall_s:.1f} s: "
        head = what + ("found a violation" if self.found else "no violation")
        lines = [head] + [f"note: {n}" for n in self.notes]
        if not self.found:
            return "\n".join(lines)
        shown = _overrides_text(self.scenario) or "the scenario as written"
        lines.append(f"smallest variant: {shown}")
        if self.path:
            lines.append(f"written to {self.path} (replay: trtsim run {self.path})")
        if self.result is not None:
            lines.append(self.result.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready (``trtsim explore --json``; docs/JSON.md)."""
        return {"found": self.found, "hunt": self.hunt, "scenario": self.scenario,
                "requested": self.requested, "examples_run": self.examples_run,
                "first_violation_at": self.first_violation_at,
                "violations_seen": self.violations_seen, "path": self.path,
                "wall_s": self.wall_s, "notes": list(self.notes),
                "error": self.error.to_dict() if self.error is not None else None,
                "result": self.result.to_dict() if self.result is not None else None}


def _overrides_text(found: dict | None) -> str:
    """``topology=tp1_pp2 workload.requests=[30, 8]``: the form ``--set`` takes."""
    return " ".join(f"{k}={v}" for k, v in (found or {}).items())


def explore(scenario, examples: int = 200, seed: int = 0, vary: tuple[str, ...] = ("topology",),
            overrides: dict | None = None, out_dir: str | None = None,
            progress: Callable[[str], None] | None = None, hunt: str = "bug") -> ExploreResult:
    """Search ``vary`` for a variant of ``scenario`` (inproc backend) that ``hunt`` names: by
    default the bug, a report or a differing block (``trtsim.app.hunt``)."""
    if not isinstance(examples, int) or examples < 1:
        raise ValueError(f"examples={examples!r} must be an integer >= 1")
    if hunt not in HUNTS:
        raise ValueError(f"hunt={hunt!r}: expected one of {', '.join(HUNTS)}")
    raw, source = load_raw(scenario)
    kind = kind_of(raw).name
    if kind != "functional":
        raise ScenarioError(f"{source}: a {kind} scenario: explore varies the ranks of a "
                            "functional scenario (trtsim run prices a perf scenario)")
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    raw["backend"] = "inproc"
    resolved = resolve(raw, source)                      # bad input fails here, once
    expect, name = resolved.expect, resolved.name
    counter = {"runs": 0, "violations": 0, "first": None, "t0": time.monotonic()}
    scratch = tempfile.TemporaryDirectory(prefix="trtsim_explore_")
    update = getattr(progress, "update", None)

    def violates(variant: dict) -> bool:
        counter["runs"] += 1
        try:
            # a variant's flipped runs go to scratch: the final run's are the ones kept
            res = run(raw, overrides=variant, out_dir=scratch.name)
        except ScenarioError:
            return False                                 # an impossible variant, not a finding
        bad = is_violation(res.verdict, res.scenario.expect, res.kv_verified, hunt) or any(
            g.flip is not None for g in res.latent)          # gates: flip (--flip-gates)
        counter["violations"] += bad
        if bad and counter["first"] is None:
            counter["first"] = counter["runs"]
        if progress is not None:
            note = f"{counter['violations']} violating"
            if update is not None:
                update(min(counter["runs"], examples), note)
            else:
                progress(f"{counter['runs']}/{examples} variants, {note}, "
                         f"{time.monotonic() - counter['t0']:.0f} s")
        return bad

    notes: list[str] = []
    if expect != "ok":
        notes.append(f"hunting the bug {name} reproduces (expect: {expect}): variants with a "
                     "report or a block that differs (--hunt unexpected: where it does not "
                     "reproduce)" if hunt == "bug" else f"hunting variants where {name} does "
                     f"not reproduce (a verdict other than {expect})")
    # The scenario as written is the first variant (hypothesis's ``@example``, in effect):
    # a search of a few examples must not miss the layout the scenario itself names.
    found: dict | None = _as_written(raw, tuple(vary)) if violates({}) else None
    if found is None and examples > 1:
        found = _search(tuple(vary), examples - 1, seed, violates, notes)
    wall = lambda: time.monotonic() - counter["t0"]  # noqa: E731
    if found is None:
        scratch.cleanup()
        if counter["runs"] < examples:
            notes.append(f"the search ended after {counter['runs']} of {examples} variants: "
                         "hypothesis found no further distinct variant of the varied keys")
        return ExploreResult(False, None, None, counter["runs"], wall_s=wall(), notes=notes,
                             requested=examples, hunt=hunt)
    found = _polish(found, tuple(vary), violates)
    scratch.cleanup()
    final = run(raw, overrides=found, out_dir=out_dir)
    path = _write(raw, found, final, source, out_dir) if out_dir else None
    return ExploreResult(True, found, final.error, counter["runs"], path, final, wall(),
                         counter["violations"], notes, examples, counter["first"], hunt)


def _as_written(raw: dict, vary: tuple[str, ...]) -> dict:
    """The varied keys as the scenario writes them (a key it leaves to its default is left
    out): the overrides that replay the scenario itself."""
    out = {}
    for key in vary:
        node: object = raw
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            out[key] = copy.deepcopy(node)
    return out


def _search(vary: tuple[str, ...], examples: int, seed: int, violates,
            notes: list[str]) -> dict | None:
    """Hypothesis's search, stratified over topologies when the topology varies: hypothesis
    revisits parts of a product space (about 30 of 47 topologies in 200 draws) and the
    interesting layouts are few, so each topology gets its share of the examples (the
    remainder to the first ones, so the shares add up to ``examples``), in an order drawn
    from ``seed``, and hypothesis varies the other keys within it."""
    config = lambda n: settings(max_examples=n, database=None, deadline=None,  # noqa: E731
                                phases=[Phase.generate, Phase.shrink],
                                suppress_health_check=list(HealthCheck))
    rng = random.Random(seed)
    if "topology" not in vary:
        try:
            return find(override_strategy(vary), violates, settings=config(examples), random=rng)
        except NoSuchExample:
            return None
    ids = by_size(topologies())
    rng.shuffle(ids)
    rest = tuple(k for k in vary if k != "topology")
    if examples < len(ids):
        notes.append(f"{examples} examples cover {examples} of the {len(ids)} topologies "
                     f"(seed-ordered); give --examples >= {len(ids)} to try each")
        ids = ids[:examples]
    elif not rest and examples > len(ids):
        notes.append(f"only the topology varies: {len(ids)} distinct variants, each run once")
    for i, tid in enumerate(ids):
        if not rest:
            if violates({"topology": tid}):
                return {"topology": tid}
            continue
        share = examples // len(ids) + (i < examples % len(ids))
        try:
            found = find(override_strategy(rest), lambda v, t=tid: violates({"topology": t, **v}),
                         settings=config(share), random=rng)
            return {"topology": tid, **found}
        except NoSuchExample:
            continue
    return None


def _polish(found: dict, vary: tuple[str, ...], violates) -> dict:
    """Shrink further along the orders a person reads: the smallest topology that still
    fails, then fewer requests, then shorter ones, then seed 0; then the topology again
    (fewer requests may fail on a smaller layout, as a search that starts from the
    scenario as written finds)."""
    best = _smaller_topology(dict(found), violates)
    key = "workload.requests"
    if key in best:
        reqs = list(best[key])
        i = len(reqs) - 1
        while i >= 0 and len(reqs) > 1:
            candidate = reqs[:i] + reqs[i + 1:]
            if violates({**best, key: candidate}):
                reqs = candidate
            i = min(i - 1, len(reqs) - 1)
        for i in range(len(reqs)):
            for shorter in sorted({1, 8, reqs[i] // 2}):
                if 0 < shorter < reqs[i] and violates({**best, key: reqs[:i] + [shorter] + reqs[i + 1:]}):
                    reqs[i] = shorter
                    break
        changed = reqs != list(best[key])
        best[key] = reqs
        if changed:
            best = _smaller_topology(best, violates)
    if "seed" in vary and best.get("seed") and violates({**best, "seed": 0}):
        best["seed"] = 0
    return best


def _smaller_topology(best: dict, violates) -> dict:
    """The smallest topology, below the one found, that still fails (the found one else)."""
    if "topology" not in best:
        return best
    size = topology(best["topology"]).world_size
    for tid in by_size(topologies()):
        if topology(tid).world_size >= size or tid == best["topology"]:
            break
        if violates({**best, "topology": tid}):
            return {**best, "topology": tid}
    return best


def _write(raw: dict, found: dict, result: RunResult, source: str, out_dir: str) -> str:
    """The counterexample as a standalone scenario file (written whole, then renamed)."""
    scenario = copy.deepcopy(raw)
    for key, value in found.items():
        set_dotted(scenario, key, value)
    scenario.pop("backend", None)
    scenario["name"] = f"{scenario.get('name', 'scenario')}_counterexample"
    path = counterexample_path(out_dir, scenario["name"])
    header = [f"Found by trtsim explore from {source}: the smallest variant that breaks it.",
              f"Varied: {', '.join(found)}. Verdict: {result.verdict}.",
              f"Replay: trtsim run {path}", *report_header(result.error)]
    with writing("--out", path):
        return write_counterexample(out_dir, scenario["name"], header, scenario,
                                    inputs=(source,))
