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

    def table(self) -> str:
        """One line per (role, kind, label): ranks, iterations, calls, calls per rank-iteration."""
        groups: dict[tuple, list[CensusRow]] = defaultdict(list)
        for r in self.rows:
            groups[(r.role, r.kind, r.label)].append(r)
        head = ("role", "kind", "label", "ranks", "iters", "calls", "per rank-iter")
        lines = []
        for (role, kind, label), rows in sorted(groups.items()):
            ranks = {r.rank for r in rows}
            iters = {r.iteration for r in rows}
            calls = sum(r.count for r in rows)
            lines.append((role, kind, label, str(len(ranks)), str(len(iters)), str(calls),
                          f"{calls / max(1, len(ranks) * len(iters)):.2f}"))
        widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head))]
        fmt = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
        return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, lines)])

    def to_dict(self) -> list[dict]:
        return [r.__dict__.copy() for r in self.rows]
