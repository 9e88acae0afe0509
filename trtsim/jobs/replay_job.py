"""Running a replay (``kind: replay``, written by ``trtsim analyze --replay``) on the inproc
backend: each rank re-issues its recorded calls, and the guard judges them as it judged the
recorded run. A replay holds when its ranks run through without a report; one that
reproduces a hang does not (``trtsim run`` exits 1 and prints the report)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..calls.errors import CollectiveError, SchedulerStalled, verdict_of
from ..comm.launch_config import LaunchConfig
from ..backends.run_ranks import run_ranks
from ..comm.reissue import replay_program
from ..layout.topology import InstanceSpec
from ..layout.places import InstanceLayout
from ..postmortem.replay import Replay
from ..postmortem.report_key import ReportKey
from ..scenario.schema import ScenarioError
from ..timeline.trace import rank_trace
from .census import Census


@dataclass
class ReplayResult:
    """What a replay run found, and whether it is the report the replay was made from."""

    replay: Replay
    verdict: str
    error: CollectiveError | None
    census: Census
    seed: int
    wall_s: float
    timeline: list | None = None                 # per rank: virtual-time events
    schema = "replay"                            # its JSON document (docs/JSON.md)

    @property
    def holds(self) -> bool:
        """No report: a replay of a hang does not hold (``trtsim run`` exits 1)."""
        return self.verdict == "ok"

    @property
    def reproduced(self) -> bool:
        """The report is the one the analysis gave, judged by typed fields (``ReportKey``:
        type, group, ranks, each rank's op, label, sequence and iteration). A replay file
        written before it carried the key (version 2) holds only the report's text: that is
        compared as it was then, less a failed rank's traceback (the replayed rank raises
        from the replay's code)."""
        if self.replay.expect is not None:
            return ReportKey.of(self.error) == self.replay.expect
        return _report(str(self.error) if self.error else "") == \
            _report(self.replay.expect_report)

    def summary(self) -> str:
        """What ``trtsim run`` prints: the replay, the verdict, whether it is the recorded
        report, and the report."""
        r = self.replay
        same = "the recorded report, reproduced" if self.reproduced else \
            "NOT the report it was made from"
        lines = [f"replay {r.source}: {len(r.scripts)} ranks, {r.calls} recorded calls, backend "
                 f"inproc, guard {r.guard}, seed {self.seed}",
                 f"verdict: {self.verdict} ({same})"]
        if self.error is not None:
            lines.append(str(self.error))
        return "\n".join(lines)

    def trace_events(self) -> dict:
        """The replayed ranks' virtual-time timeline as a Perfetto trace."""
        return rank_trace(self.timeline or [])

    def to_dict(self, census_rows: bool = False) -> dict:
        """JSON-ready (docs/JSON.md, trtsim/replay)."""
        return {"kind": "replay", "source": self.replay.source, "backend": "inproc",
                "guard": self.replay.guard, "seed": self.seed, "verdict": self.verdict,
                "holds": self.holds, "reproduced": self.reproduced,
                "error": self.error.to_dict() if self.error else None,
                "expect_report": self.replay.expect_report,
                "made_from": list(self.replay.made_from), "calls": self.replay.calls,
                "census": self.census.summary(),
                **({"census_rows": self.census.to_dict()} if census_rows else {}),
                "wall_s": self.wall_s}


def _report(text: str) -> list[str]:
    """A version-2 replay's report text, less a failed rank's traceback lines."""
    return [line for line in text.splitlines() if not line.startswith("  | ")]


def instances_of(replay: Replay) -> list[InstanceLayout]:
    """The recorded launch's instances, so ranks are named as the recorded run named them."""
    return [InstanceLayout(name, role, InstanceSpec(tp_size=tp, pp_size=pp, cp_size=cp,
                                                    enable_attention_dp=adp,
                                                    num_layers=max(pp, 1)))
            for name, role, tp, pp, cp, adp in replay.layout]


def run_replay(replay: Replay, seed: int | None = None, backend: str | None = None,
               progress=None) -> ReplayResult:
    """Re-issue every rank's recorded calls on the inproc backend and judge them."""
    if backend not in (None, "inproc"):
        raise ScenarioError(f"{replay.source}: backend: {backend!r}: a replay runs on the "
                            "inproc backend")
    seed = replay.seed if seed is None else seed
    t0 = time.perf_counter()
    try:
        out = run_ranks(instances_of(replay), replay_program, (replay.scripts, {}),
                        LaunchConfig("inproc", replay.guard, seed, replay.timeout),
                        progress=progress)
    except SchedulerStalled:              # ranks parked in calls no wait-for edge explains
        raise ScenarioError(f"{replay.source}: ranks: the recorded calls leave ranks waiting "
                            "where no peer is missing: sequences that no run makes (edited?)") \
            from None
    wall = time.perf_counter() - t0
    roles = [role for _, role, tp, pp, cp, _ in replay.layout for _ in range(tp * pp * cp)]
    return ReplayResult(replay, verdict_of(out.error), out.error,
                        Census.from_ranks(out.census, roles), seed, wall, out.clocks)


def reproducing_seed(replay: Replay, tries: int = 16) -> tuple[int, ReplayResult]:
    """The first seed whose run gives the replay's report (the inproc schedule decides which
    of several reports comes first); the last try when none does."""
    for seed in range(tries):
        result = run_replay(replay, seed)
        if result.reproduced:
            break
    return seed, result
