"""LatentGate: a condition that decided whether the members of a group entered a collective,
whose operands differ between them while its outcome still agrees.

The run is not stopped for one: the ranks agree now, and the gate is what will make them
disagree on some other input (vLLM #43547's zero-token DP step, TensorRT-LLM #14020's free KV
blocks). ``flip`` is the proof: the report of a replay in which the gate's outcome was flipped
on one member (``launch(..., gates="flip")``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..calls.errors import CollectiveError


@dataclass(frozen=True)
class LatentGate:
    """One gate site on one group: ``site`` (``path:line``), ``condition`` (source text),
    ``collective`` (the call it decided, as reports name it), ``group_ranks`` (global, sorted),
    ``iteration`` (the first it showed at), each member's operand ``values`` and ``outcomes``,
    ``flip``: the report a flip of the gate caused, or None, and ``counterexample``: the
    file that replays that flip (written with the report), or None."""

    site: str
    condition: str
    collective: str
    group_ranks: tuple[int, ...]
    iteration: int
    values: dict[int, str]
    outcomes: dict[int, bool]
    flip: CollectiveError | None = field(default=None, compare=False)
    # the member a flip flips and the evaluation of the gate on it (1-based): the replay's
    # aim, kept here so that a replay needs nothing else
    flip_rank: int = field(default=-1, compare=False)
    evaluation: int = field(default=0, compare=False)
    path: str = field(default="", compare=False, repr=False)     # the gate's file, in full
    col: int = field(default=0, compare=False, repr=False)       # the test's column
    # the flipped run, written as a replayable counterexample (``backends.counterexample``)
    counterexample: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if ":" not in self.site:
            raise ValueError(f"site={self.site!r} must be 'path:line'")
        if not self.group_ranks or list(self.group_ranks) != sorted(set(self.group_ranks)):
            raise ValueError(f"group_ranks={self.group_ranks!r} must be sorted global ranks")
        if set(self.values) != set(self.outcomes) or not set(self.values) <= set(
                self.group_ranks):
            raise ValueError(f"values/outcomes ranks {sorted(self.values)} must be members of "
                             f"{list(self.group_ranks)}")
        if self.flip is not None and not isinstance(self.flip, CollectiveError):
            raise ValueError(f"flip={self.flip!r} must be a CollectiveError or None")

    def with_flip(self, report: CollectiveError | None) -> LatentGate:
        """This gate with the flip's report."""
        return replace(self, flip=report)

    def with_counterexample(self, path: str) -> LatentGate:
        """This gate with the file its flipped run was written to."""
        return replace(self, counterexample=path)

    def line(self) -> str:
        """One line, as the CLI prints it after the verdict."""
        vals = "; ".join(f"rank {r}: {v}" for r, v in sorted(self.values.items()))
        text = (f"latent gate: {self.site} `{self.condition}` decides {self.collective} on "
                f"ranks {list(self.group_ranks)} (iteration {self.iteration}): {vals}")
        if self.flip is not None:
            text += f"; flipped on rank {self.flip_rank}: {self.flip.summary}"
        if self.counterexample is not None:
            text += f"; counterexample: {self.counterexample}"
        return text

    def to_dict(self) -> dict:
        """JSON-ready (docs/JSON.md, ``latent``)."""
        return {"site": self.site, "condition": self.condition, "collective": self.collective,
                "group_ranks": list(self.group_ranks), "iteration": self.iteration,
                "values": {str(r): v for r, v in sorted(self.values.items())},
                "outcomes": {str(r): o for r, o in sorted(self.outcomes.items())},
                "flip": self.flip.to_dict() if self.flip is not None else None,
                "flip_rank": self.flip_rank, "counterexample": self.counterexample}
