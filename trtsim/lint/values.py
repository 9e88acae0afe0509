"""The taint of an expression, in the environment of one walk (``flow.Flow``'s half that
reads values; the statements are in ``flow``)."""

from __future__ import annotations

import ast
import re

from .collectives import groups_of
from .origins import EMPTY, Taint, join, sanitised, step
from .sources import call_origin, rank_name, rank_origin, uniform_name

# Types, devices and layouts of values are the program's, not the rank's: every member
# handles the same kinds of tensors (a collective's contract requires it).
_META_ATTRS = frozenset({"dtype", "device", "is_cpu", "is_cuda", "ndim", "layout",
                         "requires_grad", "is_sparse", "is_meta", "__class__", "__name__"})
_META_CALLS = frozenset({"isinstance", "issubclass", "type", "callable", "hasattr", "id",
                         "is_initialized", "is_available", "dim", "is_contiguous",
                         "element_size", "get_backend"})
SHAPE = "the shape of "         # a chain step: the judgement knows a payload's shape
# What a point-to-point receive returns is what the peer sent: its taint is the peer's data,
# which the lint follows where the peer computes it, not the address this rank read it from.
_RECEIVE = re.compile(r"^_?i?recv(_|$)")
MUTATORS = frozenset({"append", "add", "update", "extend", "insert", "setdefault", "put",
                      "put_nowait", "appendleft", "set"})


def dotted(node: ast.expr) -> str:
    """``a.b.c`` of a chain of names; '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


_PARTS = {
    ast.BinOp: lambda n: (n.left, n.right),
    ast.BoolOp: lambda n: n.values,
    ast.Compare: lambda n: (n.left, *n.comparators),
    ast.UnaryOp: lambda n: (n.operand,),
    ast.Subscript: lambda n: (n.value, n.slice),
    ast.Tuple: lambda n: n.elts,
    ast.List: lambda n: n.elts,
    ast.Set: lambda n: n.elts,
    ast.Starred: lambda n: (n.value,),
    ast.JoinedStr: lambda n: n.values,
    ast.FormattedValue: lambda n: (n.value,),
    ast.Dict: lambda n: [*(k for k in n.keys if k is not None), *n.values],
    ast.Slice: lambda n: (n.lower, n.upper, n.step),
    ast.Await: lambda n: (n.value,),
    ast.keyword: lambda n: (n.value,),
}


def _membership(node: ast.Compare) -> bool:
    return len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))


def _this_call(taint: Taint, callee: str, where: str) -> Taint:
    """A result's origins that came in through this call's own arguments, or from inside
    the callee: those another call site passed in are that call's business."""
    mark = f" to {callee}() at "
    return frozenset(o for o in taint if not any(
        s.startswith("passed as ") and mark in s and not s.endswith(where) for s in o.chain))


class Values:
    """Expression taints; needs ``env``, ``fn``, ``program``, ``facts``, ``ctrl()``."""

    def is_self(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and self.fn is not None and self.fn.is_method \
            and node.id == self.fn.params[0] and node.id not in self.rebound

    def test(self, node: ast.expr) -> Taint:
        """A gate's test: its taint, recorded for the judgement."""
        taint = self.expr(node)
        self.facts.add(self.facts.tests, (self.path, node.lineno, node.col_offset), taint)
        return taint

    def expr(self, node) -> Taint:
        kind = type(node)               # a parsed tree's nodes are of the exact ast classes
        if kind is ast.Name:
            return self.name(node)
        if kind is ast.Attribute:
            return self.attribute(node)
        if kind is ast.Call:
            return self.call(node)
        if node is None or kind is ast.Constant or kind is ast.Lambda:
            return EMPTY
        if kind is ast.IfExp:
            return join(self.test(node.test), self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self.comprehension(node)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Is, ast.IsNot)) and \
                isinstance(node.comparators[0], ast.Constant) and \
                node.comparators[0].value is None and isinstance(node.left, ast.Attribute) \
                and self.is_self(node.left.value):
            return self.attr_taint(node.left.attr, "nulls")
        if isinstance(node, ast.Compare) and _membership(node):
            left, right = self.expr(node.left), self.expr(node.comparators[0])
            if left and not right and all(o.kind == "rank" for o in left):
                return EMPTY     # "am I in this group": the same on the group it lists
        if isinstance(node, ast.NamedExpr):
            taint = self.expr(node.value)
            self.assign(node.target, taint, node.value)
            return taint
        parts = _PARTS.get(type(node))
        if parts is not None:               # the common shapes, without a generic walk
            return join(*(self.expr(c) for c in parts(node)))
        return join(*(self.expr(c) for c in ast.iter_child_nodes(node)
                      if isinstance(c, (ast.expr, ast.keyword, ast.comprehension))))

    def name(self, node: ast.Name) -> Taint:
        if node.id in self.declared:
            return EMPTY
        if node.id in self.env:
            return self.env[node.id]
        if rank_name(node.id):
            return rank_origin(node.id, node.id, self.site(node))
        if uniform_name(node.id):
            return EMPTY
        return self.global_taint(node.id)

    def global_taint(self, name: str) -> Taint:
        facts = self.facts
        taint = facts.read(facts.globals, (self.path, name), self.reads)
        imported = self.module.imports.get(name)
        if imported is not None and imported[1] is not None and imported[0]:
            for mod in self.program.modules_named(imported[0]):
                taint = join(taint, facts.read(facts.globals, (mod.path, imported[1]),
                                               self.reads))
        return taint

    def attribute(self, node: ast.Attribute) -> Taint:
        if node.attr in self.declared:
            return EMPTY
        if node.attr == "shape" and isinstance(node.value, ast.Name):
            return step(self.expr(node.value), f"{SHAPE}{node.value.id}")
        if rank_name(node.attr):
            return rank_origin(node.attr, dotted(node) or node.attr, self.site(node))
        if uniform_name(node.attr) or node.attr in _META_ATTRS:
            return EMPTY
        if self.is_self(node.value):
            if self.fn.is_constructor:     # a constructor sees what it has set so far
                return self.built_here.get(node.attr, EMPTY)
            return self.attr_taint(node.attr)
        base = node.value
        if isinstance(base, ast.Attribute) and self.is_self(base.value):
            paths = self.family_paths()
            facts = self.facts
            field = join(*(facts.read(facts.fields, (p, base.attr, node.attr), self.reads)
                           for p in paths))
            if any((p, base.attr) in facts.built for p in paths):
                return field
            self.reads.update((id(facts.built), (p, base.attr)) for p in paths)
            return join(field, self.expr(node.value))
        return self.expr(node.value)

    def family_paths(self) -> set:
        return self.program.family_paths(self.path, self.fn.cls)

    def attr_taint(self, attr: str, table: str = "attrs") -> Taint:
        found = getattr(self.facts, table)
        return join(*(self.facts.read(found, (p, attr), self.reads)
                      for p in self.family_paths()))

    def comprehension(self, node) -> Taint:
        parts = []
        for gen in node.generators:
            it = self.test(gen.iter)
            self.assign(gen.target, it, gen.iter)
            parts.append(it)
            parts += [self.test(cond) for cond in gen.ifs]
        results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        return join(*parts, *(self.expr(r) for r in results))

    def call(self, node: ast.Call, statement: bool = False) -> Taint:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            read = ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load())
            ast.copy_location(read, node)
            return join(self.attribute(read), *(self.expr(a) for a in node.args[2:]))
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else ""
        positional = [self.expr(a) for a in node.args]
        named = [(k.arg, self.expr(k.value)) for k in node.keywords]
        args = join(*positional, *(t for _, t in named))
        op = self.program.op_of(node, self.extra, self.text)
        if op is not None:
            groups, _how = groups_of(node, op, self.text, self.alternatives)
            first = node.args[0] if node.args else None
            if statement and isinstance(first, ast.Name):         # in place: the buffer
                self.env[first.id] = self.sanitise(self.env.get(first.id, EMPTY), groups)
            return self.sanitise(args, groups)
        if name in _META_CALLS or name in self.declared or _RECEIVE.match(name):
            return EMPTY
        if name in ("size", "numel") and isinstance(func, ast.Attribute) and \
                isinstance(func.value, ast.Name):
            return step(self.expr(func.value), f"{SHAPE}{func.value.id}")
        source = call_origin(dotted(func), name, node, self.site(node), self.text)
        if source is not None:
            return source
        if isinstance(func, ast.Attribute) and name in MUTATORS:
            self.mutate(func.value, args, node)
        callees = self.program.resolve(node, self.fn) if self.fn is not None else ()
        if callees:
            return join(*(self.enter(c, node, positional, named) for c in callees))
        base = self.expr(func.value) if isinstance(func, ast.Attribute) else EMPTY
        return join(base, args)

    def sanitise(self, taint: Taint, groups: tuple[str, ...]) -> Taint:
        """A consensus result: uniform on the group (on several possible groups, only what
        all of them make uniform)."""
        out = [sanitised(taint, g) for g in groups]
        return frozenset.intersection(*out) if len(out) > 1 else out[0]

    def enter(self, callee, node: ast.Call, positional: list, named: list) -> Taint:
        """A call into analysed code: its arguments flow to its parameters, the conditions
        of this call to its being reached; the result is the callee's return taint."""
        facts, where = self.facts, self.site(node)
        facts.mark_called(callee.key)
        params = callee.own_params
        for i, (arg, taint) in enumerate(zip(node.args, positional)):
            if i < len(params) and not isinstance(arg, ast.Starred):
                facts.add(facts.params, (callee.key, params[i]), taint and step(
                    taint, f"passed as {params[i]} to {callee.name}() at {where}"))
        for key, taint in named:
            if key in params:
                facts.add(facts.params, (callee.key, key), taint and step(
                    taint, f"passed as {key} to {callee.name}() at {where}"))
        reached = join(self.ctrl(), self.reached())
        facts.add(facts.reach, callee.key, step(reached, f"{callee.name}() called at {where}"))
        result = _this_call(facts.read(facts.returns, callee.key, self.reads), callee.name,
                            where)
        return step(result, f"returned by {callee.name}()")

    def mutate(self, target: ast.expr, taint: Taint, node: ast.AST) -> None:
        """``self.x.append(v)``, ``VAR.set(v)`` and the like on state that outlives the call:
        it takes ``v``'s taint, the conditions in force and (a constant stored: an event) this
        code's being reached. A local container's length is decided by the conditions it grows
        under (the join after a branch), not by what it holds: a loop over it runs as often on
        every rank."""
        if not isinstance(target, ast.Name):
            self.assign(target, taint, node)
            return
        if target.id in self.env:
            return
        event = bool(node.args) and all(isinstance(a, ast.Constant) for a in node.args)
        taint = join(taint, self.ctrl(), self.reached() if event else EMPTY)
        self.facts.add(self.facts.globals, (self.path, target.id), step(
            taint, f"{target.id}.{node.func.attr}({self.text(node.args[0]) if node.args else ''})"
                   f" at {self.site(node)}"))
