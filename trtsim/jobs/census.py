"""The collective census: how many calls each rank issued, per iteration, role, group kind
and label. The deterministic signal behind incident 5.3 (one gather per decode iteration
removed on generation workers) and a budget tests can assert."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass


@dataclass(frozen=True)
class CensusRow:
    role: str
    rank: int          # global rank
    iteration: int
    kind: str          # tp | pp | cp | tp_cp | world | p2p
    label: str         # the call's label, or its op when unlabelled
    count: int


class Census:
    """Rows of (role, rank, iteration, kind, label, count) with filters and a table."""

    def __init__(self, rows: list[CensusRow]):
        self.rows = rows

    @classmethod
    def from_ranks(cls, per_rank: list[dict], roles: list[str]) -> "Census":
        rows = [CensusRow(roles[r] or "-", r, it, kind, label, n)
                for r, counts in enumerate(per_rank) for (it, kind, label), n in counts.items()]
        return cls(sorted(rows, key=lambda x: (x.role, x.rank, x.iteration, x.kind, x.label)))

    def select(self, role=None, kind=None, label=None, iteration=None, rank=None):
        return [r for r in self.rows if (role is None or r.role == role)
                and (kind is None or r.kind == kind) and (label is None or r.label == label)
                and (iteration is None or r.iteration == iteration)
                and (rank is None or r.rank == rank)]

    def count(self, **filters) -> int:
        return sum(r.count for r in self.select(**filters))

    def per_iteration(self, **filters) -> dict[int, int]:
        out: dict[int, int] = defaultdict(int)
        for r in self.select(**filters):
            out[r.iteration] += r.count
        return dict(sorted(out.items()))

    def summary(self) -> list[dict]:
        """One entry per (role, kind, label): ranks, iterations, calls, calls per
        rank-iteration -- what the table shows and JSON carries by default (the full rows of
        a long executor run are megabytes)."""
        groups: dict[tuple, list[CensusRow]] = defaultdict(list)
        for r in self.rows:
            groups[(r.role, r.kind, r.label)].append(r)
        out = []
        for (role, kind, label), rows in sorted(groups.items()):
            ranks = len({r.rank for r in rows})
            iters = len({r.iteration for r in rows})
            calls = sum(r.count for r in rows)
            out.append({"role": role, "kind": kind, "label": label, "ranks": ranks,
                        "iterations": iters, "calls": calls,
                        "per_rank_iteration": calls / max(1, ranks * iters)})
        return out

    def table(self) -> str:
        """``summary`` as an aligned table."""
        head = ("role", "kind", "label", "ranks", "iters", "calls", "per rank-iter")
        lines = [(e["role"], e["kind"], e["label"], str(e["ranks"]), str(e["iterations"]),
                  str(e["calls"]), f"{e['per_rank_iteration']:.2f}") for e in self.summary()]
        widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]
        fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
        return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, lines)])

    def to_dict(self) -> list[dict]:
        """Every row (``trtsim run --json F --census-rows``)."""
        return [r.__dict__.copy() for r in self.rows]
