"""What the analysis knows about the whole program, grown until it stops changing.

Every table maps a key to a taint and only grows: an origin is added when no origin with the
same identity (kind, what, site, groups) is there yet, so the chains of explanation do not keep
the fixpoint from ending. The tables are filled while every function is walked (``flow``) and
read by the walks of the next round; a round that adds nothing ends the analysis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .origins import EMPTY, MAX_ORIGINS, Taint


def _identity(o) -> tuple:
    """An origin's identity in the tables: what was read, where, on which groups, and the
    call sites it was passed through (a result keeps apart what each call passed in)."""
    return (o.kind, o.what, o.site, o.groups,
            tuple(s for s in o.chain if s.startswith("passed as ")))


def _order(o) -> tuple:
    return (o.kind, o.site, o.what, o.chain, sorted(o.groups))


@dataclass
class Facts:
    """The program-wide tables (one object per analysis; nothing global)."""

    params: dict = field(default_factory=dict)     # (function key, parameter) -> taint
    called: set = field(default_factory=set)       # function keys with an analysed caller
    reach: dict = field(default_factory=dict)      # function key -> taint of being reached
    returns: dict = field(default_factory=dict)    # function key -> taint of its result
    attrs: dict = field(default_factory=dict)      # (module path, attribute) -> taint
    attr_defs: dict = field(default_factory=dict)  # (module path, attribute) -> [expr]
    fields: dict = field(default_factory=dict)     # (path, attribute, field) -> taint
    nulls: dict = field(default_factory=dict)      # (path, attribute) -> taint of None-ness
    built: set = field(default_factory=set)        # (path, attribute) set by a constructor
    globals: dict = field(default_factory=dict)    # (module path, name) -> taint
    tests: dict = field(default_factory=dict)      # (path, line, col) -> taint of a test
    changed: bool = False
    grown: set = field(default_factory=set)        # (table, key) grown this round
    writes: set | None = None                      # (table, key) the current walk tries
    known: dict = field(default_factory=dict)      # (table, key) -> its origins' identities

    def add(self, table: dict, key, taint: Taint) -> None:
        """Grow ``table[key]`` by the origins of ``taint`` it lacks (bounded). The key is
        noted among the walk's writes even when nothing is added: which keys a walk writes
        is a property of its code, whatever the facts hold."""
        if self.writes is not None:
            self.writes.add((id(table), key))
        if not taint:
            return
        have = table.get(key, EMPTY)
        if len(have) >= MAX_ORIGINS:
            return
        slot = (id(table), key)
        known = self.known.get(slot)
        if known is None:
            known = self.known[slot] = {_identity(o) for o in have}
        new = [o for o in taint if _identity(o) not in known]
        if new:
            room = MAX_ORIGINS - len(have)
            if len(new) > room:         # which ones are kept may not hang on hash order
                new.sort(key=_order)
            new = new[:room]
            table[key] = frozenset((*have, *new))
            known.update(_identity(o) for o in new)
            self.changed = True
            self.grown.add((id(table), key))

    def read(self, table: dict, key, reads: set):
        """``table[key]`` (empty when absent), noting that the reader depends on it: a walk
        is repeated only when something it read has grown."""
        reads.add((id(table), key))
        return table.get(key, EMPTY)

    def mark_built(self, key) -> None:
        if self.writes is not None:
            self.writes.add((id(self.built), key))
        if key not in self.built:
            self.built.add(key)
            self.changed = True
            self.grown.add((id(self.built), key))

    def mark_called(self, key: str) -> None:
        if key not in self.called:
            self.called.add(key)
            self.changed = True

    def define(self, key, expr) -> None:
        """Remember an expression assigned to an attribute (to read a flag's meaning)."""
        exprs = self.attr_defs.setdefault(key, [])
        if len(exprs) < 4 and all(e is not expr for e in exprs):
            exprs.append(expr)
