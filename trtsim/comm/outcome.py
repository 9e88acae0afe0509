"""What a backend brings back from running every rank of a launch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..calls.errors import CollectiveError
from ..calls.records import CallRecord


@dataclass
class LaunchOutcome:
    """Per-rank results (or the report that stopped the launch), and what the run observed."""

    results: list[Any]
    error: CollectiveError | None = None
    census: list[dict] = field(default_factory=list)      # per rank: {(iter, kind, label): n}
    divergences: list = field(default_factory=list)        # lockstep.Divergence notes
    notes: list[str] = field(default_factory=list)         # what the backend chose and why
    extras: list[Any] = field(default_factory=list)        # per rank: backend-specific facts
    trace: list[tuple[int, CallRecord]] = field(default_factory=list)   # (step, record)
    clocks: list[list[tuple]] = field(default_factory=list)   # per rank: virtual-time events
    latent: list = field(default_factory=list)             # LatentGate, with gates on
