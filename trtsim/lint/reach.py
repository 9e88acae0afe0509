"""Which collectives each function reaches, through which calls, under which conditions.

``sites(fn)`` lists the calls of ``fn`` that reach a collective (the collective itself, or a
call into analysed code that reaches one; recursion is cut, and so is a chain deeper than
``MAX_DEPTH`` frames), each with its
``Reach`` records: the collective, the chain of calls, and the literals - conditions with the
outcome they must have - that the helpers below require on the way. The literals let the
judgement see a skip confined to where the collective would not run anyway (``if not
flag and not need_pp_sync: return`` before a ``pp_allgather`` under ``if need_pp_sync``).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, replace

from ..gates.model import enclosing
from .collectives import group_of_text, groups_of
from .findings import CollectiveSite
from .values import dotted

MAX_DEPTH = 6
MAX_REACHES = 24
MAX_EXPANSION = 3
ADP = re.compile(r"attention_dp|dp_attention|attn_dp|enable_dp_attention")


@dataclass(frozen=True)
class Reach:
    """One collective reached from a call site."""

    collective: CollectiveSite
    via: tuple[str, ...]
    needs: frozenset                   # (condition text, outcome) that must hold below


# Fields that never hold a call (names, operators, contexts): not descended into.
_LEAVES = frozenset({"ctx", "op", "ops", "id", "attr", "names", "name", "arg", "kind",
                     "type_comment", "level", "module", "is_async", "conversion"})
_CODE = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@functools.lru_cache(maxsize=None)
def _fields(kind: type) -> tuple[str, ...]:
    return tuple(f for f in kind._fields if f not in _LEAVES)


def _walk_calls(node: ast.AST) -> list[ast.Call]:
    """The calls of a function body (or a module's top level), nested code objects left
    out, in the order of a depth-first walk that takes the last child first."""
    out = []
    stack = [node]
    first = True
    while stack:
        cur = stack.pop()
        if first:
            first = False
        elif isinstance(cur, _CODE):
            continue
        elif isinstance(cur, ast.Call):
            out.append(cur)
        for name in _fields(type(cur)):
            value = getattr(cur, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return out


def calls_of(fn) -> list[ast.Call]:
    """A function's calls in source order (line, column), found once."""
    if fn.calls is None:
        fn.calls = sorted(_walk_calls(fn.node), key=lambda c: (c.lineno, c.col_offset))
    return fn.calls


def collective_reach(program, extra: frozenset) -> set[str]:
    """The keys of the functions that issue a collective or call (through any depth of
    analysed calls) one that does: a superset of those ``Reaches.sites`` finds, since it
    cuts neither recursion nor depth."""
    found: set[str] = set()
    callers: dict[str, set[str]] = {}
    for fn in program.functions.values():
        for call in calls_of(fn):
            if program.op_of(call, extra, lambda n, fn=fn: dotted(n) or fn.module.src.segment(n)):
                found.add(fn.key)
            for callee in program.resolve(call, fn):
                callers.setdefault(callee.key, set()).add(fn.key)
    todo = list(found)
    while todo:
        for caller in callers.get(todo.pop(), ()):
            if caller not in found:
                found.add(caller)
                todo.append(caller)
    return found


class Reaches:
    """Reach records per function, computed once each (cycles cut)."""

    def __init__(self, program, facts, extra: frozenset):
        self.program, self.facts, self.extra = program, facts, extra
        self._of: dict[str, tuple[Reach, ...]] = {}
        self._sites: dict[str, list] = {}
        self._busy: set[str] = set()

    def text(self, fn, node: ast.AST) -> str:
        return dotted(node) or fn.module.src.segment(node)

    def sites(self, fn) -> list[tuple[ast.Call, tuple[Reach, ...]]]:
        if fn.key in self._sites:
            return self._sites[fn.key]
        out = []
        assigned: dict = {}
        for call in calls_of(fn):
            op = self.program.op_of(call, self.extra, lambda n: self.text(fn, n))
            if op is not None:
                if not assigned:            # read the function's assignments only when needed
                    assigned = _assigned_texts(fn, lambda n: self.text(fn, n)) or {"": []}
                groups, how = groups_of(call, op, lambda n: self.text(fn, n),
                                        lambda name: self.alternatives(fn, assigned, name))
                site = CollectiveSite(op, groups, how, fn.module.path, call.lineno,
                                      call.col_offset, fn.module.src.segment(call, 120))
                out.append((call, (Reach(site, (), frozenset()),)))
                continue
            below = []
            named = _receiver_group(call, lambda n: self.text(fn, n))
            for callee in self.program.resolve(call, fn):
                where = f"{callee.qualname}() called at {fn.module.path}:{call.lineno}"
                below += [Reach(_on(r.collective, named, where), (where, *r.via), r.needs)
                          for r in self.of(callee)]
            if below:
                out.append((call, tuple(below[:MAX_REACHES])))
        self._sites[fn.key] = out
        return out

    def alternatives(self, fn, assigned: dict, name: str) -> list[str]:
        """The source texts a group variable (a local, or ``self.x`` of the class) was
        assigned: ``group=g`` is judged for every group they name."""
        if name.startswith("self."):
            exprs = self.facts.attr_defs.get((fn.module.path, name[5:]), [])
            return [fn.module.src.segment(e) for e in exprs]
        return assigned.get(name, [])

    def of(self, fn) -> tuple[Reach, ...]:
        """The collectives ``fn`` reaches, with the literals its own gates add."""
        if fn.key in self._of:
            return self._of[fn.key]
        if fn.key in self._busy or len(self._busy) >= MAX_DEPTH:
            return ()                                 # recursion, or deeper than followed
        self._busy.add(fn.key)
        try:
            out: dict = {}
            for call, reaches in self.sites(fn):
                here = self.path_literals(fn, call)
                for r in reaches:
                    key = (r.collective, r.via[:1])
                    if key not in out and len(out) < MAX_REACHES:
                        out[key] = Reach(r.collective, r.via, r.needs | here)
            result = tuple(out.values())
        finally:
            self._busy.discard(fn.key)
        self._of[fn.key] = result
        return result

    def path_literals(self, fn, call: ast.Call, but=None) -> frozenset:
        """The literals of the gates of ``fn`` that enclose ``call`` (``but`` one)."""
        out = set()
        for gate in enclosing(fn.gates(), call.lineno, call.col_offset):
            if gate is not but:
                out |= self.literals(fn, gate.test, gate.outcome_at(call.lineno,
                                                                    call.col_offset))
        return frozenset(out)

    def literals(self, fn, test: ast.expr, outcome: bool, depth: int = 0) -> frozenset:
        """What must hold for ``test`` to give ``outcome``: (atom text, truth) pairs, a
        ``self`` flag opened up into the expression the class assigns it."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.literals(fn, test.operand, not outcome, depth)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) == outcome:
            return frozenset().union(*(self.literals(fn, v, outcome, depth)
                                       for v in test.values))
        atom = self.text(fn, test)
        out = {(atom, outcome)}
        if depth < MAX_EXPANSION and isinstance(test, ast.Attribute) and \
                isinstance(test.value, ast.Name) and test.value.id == "self":
            defs = self.facts.attr_defs.get((fn.module.path, test.attr), [])
            if len(defs) == 1:
                out |= self.literals(fn, defs[0], outcome, depth + 1)
        return frozenset(out)


def _receiver_group(call: ast.Call, text):
    """(group, receiver text) when a method call's receiver names a group
    (``get_tp_group().all_reduce(x)``, ``self.pp_handler.broadcast(...)``), else None."""
    if not isinstance(call.func, ast.Attribute):
        return None
    shown = text(call.func.value)
    group = group_of_text(shown)
    return (group, shown) if group else None


def _on(site: CollectiveSite, named, where: str) -> CollectiveSite:
    """A collective whose group its own code leaves open (a coordinator's ``self`` group)
    takes the group its caller's receiver names."""
    if named is None or site.groups != ("world",) or "world" in site.group_from.replace(
            "the world", ""):
        return site
    return replace(site, groups=(named[0],),
                   group_from=f"the receiver {named[1]!r} of {where}")


def adp_off(literals: frozenset) -> bool:
    """Whether the literals confine the path to attention DP off."""
    return any(not truth and ADP.search(atom) for atom, truth in literals)


def _assigned_texts(fn, text) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for node in ast.walk(fn.node):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, []).append(text(node.value))
    return out
