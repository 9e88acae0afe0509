"""Consensus over request ids and transfer outcomes (pure functions over gathered lists).

A request is ready when every member of the gathering group reports it; outcomes combine as
cancelled and failed by union (any rank that saw it), completed by intersection (every rank
finished), with precedence cancelled > failed > completed, so every rank sets the same state.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable


def find_consensus_request_ids(lists: Iterable[Iterable[int]], group_size: int) -> list[int]:
    """Ids present on all ``group_size`` members, in first-seen order (each list counted once
    per id, so a rank cannot vote twice)."""
    counts: Counter = Counter()
    order: list[int] = []
    for ids in lists:
        for rid in dict.fromkeys(ids):
            if rid not in counts:
                order.append(rid)
            counts[rid] += 1
    return [rid for rid in order if counts[rid] == group_size]


def union(lists: Iterable[Iterable[int]]) -> set[int]:
    out: set[int] = set()
    for ids in lists:
        out.update(ids)
    return out


def intersection(lists: list[Iterable[int]]) -> set[int]:
    if not lists:
        return set()
    return set.intersection(*(set(ids) for ids in lists))


def combine_outcomes(to_process: list[int], cancelled: list[list[int]], failed: list[list[int]],
                     completed: list[list[int]]) -> tuple[list[int], list[int], list[int]]:
    """(cancelled, failed, completed) among ``to_process`` from every member's lists."""
    all_cancelled, all_failed = union(cancelled), union(failed)
    all_completed = intersection(completed)
    new_cancelled = [r for r in to_process if r in all_cancelled]
    new_failed = [r for r in to_process if r in all_failed and r not in all_cancelled]
    terminal = set(new_cancelled) | set(new_failed)
    new_completed = [r for r in to_process if r in all_completed and r not in terminal]
    return new_cancelled, new_failed, new_completed
