"""From reach records and test taints to findings.

A gate of function ``f`` that encloses a call reaching a collective on group ``G`` is reported
when its test is rank-local on ``G`` (``origins.local_on``), unless:
- its other outcome reaches the same op on the same group (``if rank == src: broadcast(x)
  else: broadcast(None)`` decides the line, never whether the collective is entered);
- it lies on one member's own path (past ``rank == src`` or ``is_last_rank``): no peer
  evaluates it, and the test that split the members is judged on its own;
- it is an ``assert`` (failing, it raises: a crash the run reports, never a quiet skip);
- the path is confined: the outcome that skips the collective requires a condition the path
  to the collective contradicts, so the skip happens only where the collective would not run;
- the source declares it uniform on ``G`` (``# trtsim: uniform(G) -- reason``): then it is
  listed among the suppressed gates instead.
"""

from __future__ import annotations

import ast

from .findings import Finding, GateSite, SuppressedGate
from .origins import assumption, local_on
from .reach import adp_off
from .sources import selects_one
from .values import SHAPE


def _contradicts(skip: frozenset, needs: frozenset) -> bool:
    return any((atom, not truth) in needs for atom, truth in skip)


def judge(program, facts, reaches) -> tuple[list[Finding], list[SuppressedGate]]:
    """Every finding, and every suppressed gate, in file and line order."""
    findings: dict = {}
    suppressed: dict = {}
    for fn in program.functions.values():
        sites = reaches.sites(fn)
        if not sites:
            continue
        for call, rs in sites:
            for gate in fn.gates():
                outcome = gate.outcome_at(call.lineno, call.col_offset)
                if outcome is None or gate.kind == "assert":   # a failed assert raises:
                    continue                                   # a crash, never a quiet skip
                taint = facts.tests.get((fn.module.path, gate.line, gate.col))
                if not taint:
                    continue
                for r in rs:
                    _one(program, fn, reaches, sites, call, gate, outcome, taint, r,
                         findings, suppressed)
    order = sorted(findings.values(), key=lambda f: (f.gate.path, f.gate.line,
                                                     f.collective.path, f.collective.line))
    return order, [suppressed[k] for k in sorted(suppressed)]


def _one(program, fn, reaches, sites, call, gate, outcome, taint, r, findings, suppressed):
    others = reaches.path_literals(fn, call, but=gate)
    mine = reaches.literals(fn, gate.test, outcome)
    needs = r.needs | others | mine
    skip = reaches.literals(fn, gate.test, not outcome)
    for group in r.collective.groups:
        # attention DP is off where the collective runs, or wherever the gate skips it
        adp = program.attention_dp and not adp_off(needs) and not adp_off(skip)
        origins = tuple(o for o in local_on(taint, group, adp)
                        if not _payload_shape(o, call, r))
        if not origins:
            continue
        if _both_outcomes(gate, outcome, sites, r, group) or \
                _single_member(fn, gate, call, group):
            continue
        if _contradicts(skip, r.needs | others):
            continue
        c = r.collective
        if gate.suppression is not None and gate.suppression.covers(group):
            key = (gate.site, gate.col)
            prev = suppressed.get(key)
            entry = f"{c.op} on {group} at {c.site}"
            listed = prev.collectives if prev else ()
            if entry not in listed:
                s = gate.suppression
                suppressed[key] = SuppressedGate(gate.site, gate.condition, s.groups, s.reason,
                                                 listed + (entry,))
            continue
        key = (gate.path, gate.line, gate.col, c.path, c.line, c.col, group)
        if key in findings:
            continue
        findings[key] = Finding(
            c, GateSite(gate.path, gate.line, gate.col, gate.kind, gate.condition, outcome,
                        fn.qualname),
            group, tuple(o.describe() for o in origins),
            r.via,
            assumption(origins, group, adp))


def _payload_shape(origin, call, r) -> bool:
    """Whether the origin is only the shape of a tensor this call hands to the collective:
    the collective's contract makes the shapes agree (or the ranks mismatch anyway)."""
    shaped = [s[len(SHAPE):] for s in origin.chain if s.startswith(SHAPE)]
    if not shaped:
        return False
    passed = {a.id for a in call.args if isinstance(a, ast.Name)} | \
        {k.value.id for k in call.keywords if isinstance(k.value, ast.Name)}
    return shaped[-1] in passed


def _single_member(fn, gate, call, group) -> bool:
    """Whether ``gate`` lies on one member's own path: past a test (an ``if``, an early exit,
    an ``assert``) that only one member of the group passes - ``rank == src``, ``is_last_rank``.
    Such a gate is evaluated by that member alone; its peers reach their side of the
    collective on another path (the root's broadcast and the others' receive), which the
    test that splits them decides and the judgement of that test covers."""
    for root in fn.gates():
        if root is gate:
            continue
        outcome = root.outcome_at(call.lineno, call.col_offset)
        if outcome is not None and selects_one(root.test, outcome, group):
            return True
    return False


def _both_outcomes(gate, outcome, sites, r, group) -> bool:
    """Whether the gate's other outcome reaches the same op on the same group."""
    c = r.collective
    for call, rs in sites:
        if gate.outcome_at(call.lineno, call.col_offset) is (not outcome):
            if any(o.collective.op == c.op and group in o.collective.groups for o in rs):
                return True
    return False
