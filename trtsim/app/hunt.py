"""What ``trtsim explore`` counts as a violation: the hunt.

``bug`` (the default) is a report or a transferred block that differs from its source: a
verdict other than ``ok``, which is what correct code gives. For a scenario that expects ``ok``
that is every run that does not hold; for one that reproduces an incident (``expect:
mismatch``) it is every variant where the incident, or another report, shows, so a search
finds the smallest layout with the bug rather than one where the reproduction fails.
``unexpected`` is a verdict other than the scenario's ``expect`` (for a reproduction: the
variants where it does not reproduce), or a block that differs.
"""

from __future__ import annotations

HUNTS = {
    "bug": "a report (a verdict other than ok) or a transferred block that differs from its "
           "source",
    "unexpected": "a verdict other than the scenario's expect, or a block that differs",
}


def is_violation(verdict: str, expect: str, kv_verified: bool | None, hunt: str) -> bool:
    """Whether a run with ``verdict`` (of a scenario expecting ``expect``) is what ``hunt``
    searches for (one of ``HUNTS``). ``kv_verified`` False (a block differs) is a violation
    of either hunt."""
    wanted = "ok" if hunt == "bug" else expect
    return verdict != wanted or kv_verified is False
