"""What the lint reports: typed results, and their JSON form (docs/JSON.md, trtsim/lint)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CollectiveSite:
    """A collective call: where, which op, on which group(s), and how the group was read."""

    op: str
    groups: tuple[str, ...]
    group_from: str
    path: str
    line: int
    col: int
    call: str

    @property
    def site(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class GateSite:
    """The gate of a finding: its site, kind, condition, and the outcome the path needs."""

    path: str
    line: int
    col: int
    kind: str
    condition: str
    outcome: bool
    function: str

    @property
    def site(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Finding:
    """A collective whose reaching is decided by a rank-local condition."""

    collective: CollectiveSite
    gate: GateSite
    group: str
    origins: tuple[str, ...]            # each: what (kind, site) -> chain steps
    via: tuple[str, ...]                # calls from the gate's function to the collective
    assumption: str

    def text(self) -> str:
        """The report, in the guard's style: the collective, the gate, why it is rank-local."""
        c, g = self.collective, self.gate
        lines = [f"{g.site}: rank-local gate decides {c.op} on the {self.group} group",
                 f"  collective: {c.op} at {c.site} ({c.call}; group from {c.group_from})",
                 f"  gate:       {g.kind} `{g.condition}` in {g.function}() must be "
                 f"{g.outcome} to reach it"]
        if self.via:
            lines.append(f"  via:        {' -> '.join(self.via)}")
        lines.append("  rank-local:")
        lines += [f"    {o}" for o in self.origins]
        lines.append(f"  assumption: {self.assumption}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["collective"]["site"] = self.collective.site
        d["gate"]["site"] = self.gate.site
        for key in ("origins", "via"):
            d[key] = list(d[key])
        d["collective"]["groups"] = list(self.collective.groups)
        return d


@dataclass(frozen=True)
class SuppressedGate:
    """A gate the source declares uniform (``# trtsim: uniform(...) -- reason``), with what
    it would have been reported for."""

    site: str
    condition: str
    groups: tuple[str, ...]
    reason: str
    collectives: tuple[str, ...]        # "op on group at site"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["groups"], d["collectives"] = list(self.groups), list(self.collectives)
        return d


@dataclass(frozen=True)
class LintResult:
    """Everything one ``trtsim lint`` run found."""

    findings: tuple[Finding, ...]
    suppressed: tuple[SuppressedGate, ...]
    files: int
    functions: int
    collectives: int
    skipped: tuple[str, ...]
    rounds: int
    seconds: float

    def to_dict(self) -> dict:
        return {"findings": [f.to_dict() for f in self.findings],
                "suppressed": [s.to_dict() for s in self.suppressed],
                "files": self.files, "functions": self.functions,
                "collectives": self.collectives, "skipped": list(self.skipped),
                "rounds": self.rounds, "seconds": self.seconds}
