"""Stores: what an assignment does to the environment and to the program-wide facts (the
half of ``flow.Flow`` that writes; ``flow`` walks, ``values`` reads)."""

from __future__ import annotations

import ast

from .origins import EMPTY, Taint, join, step


def _object(value) -> bool:
    """A call of a class (a CapWords name): a new object."""
    if not isinstance(value, ast.Call):
        return False
    name = value.func.id if isinstance(value.func, ast.Name) else \
        value.func.attr if isinstance(value.func, ast.Attribute) else ""
    return name[:1].isupper() and not name.isupper()


def _constructed(value) -> bool:
    """An object built field by field (keyword arguments): its fields are kept apart."""
    return _object(value) and bool(value.keywords)


class Stores:
    """Assignments; needs ``env``, ``fn``, ``facts``, ``ctrl()``, ``reached()``, ``text()``,
    ``site()``, ``is_self()``, ``expr()`` of the walk."""

    def assign(self, target: ast.expr, taint: Taint, value: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self.rebound.add(target.id) if self.fn is not None and self.fn.is_method and \
                target.id == self.fn.params[0] else None
            if value is not None and isinstance(value, ast.expr):
                nodes = self.assigned.setdefault(target.id, [])
                if len(nodes) < 8:
                    nodes.append(value)
            if self.fn is None or target.id in self.declared_global:
                self.facts.add(self.facts.globals, (self.path, target.id),
                               step(join(taint, self.ctrl(), self.reached()),
                                    f"{target.id} set at {self.site(target)}"))
            self.env[target.id] = taint
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.assign(elt, taint, None)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, taint, None)
        elif isinstance(target, ast.Attribute) and self.is_self(target.value):
            self.attribute_set(target, taint, value)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            base = target.value
            part = target.attr if isinstance(target, ast.Attribute) else None
            while isinstance(base, (ast.Subscript, ast.Attribute)) and not (
                    isinstance(base, ast.Attribute) and self.is_self(base.value)):
                part = base.attr if isinstance(base, ast.Attribute) else part
                base = base.value
            if isinstance(base, ast.Attribute) and part is not None:
                # ``self.x.y[k] = v``: the field ``y`` of ``self.x`` holds ``v``'s data; the
                # object handed on whole is not the data of each of its fields
                self.facts.add(self.facts.fields, (self.path, base.attr, part), step(
                    taint, f"self.{base.attr}.{part} changed at {self.site(target)}"))
                return
            if isinstance(base, ast.Name) and base.id in self.env:
                self.env[base.id] = join(self.env[base.id], taint)
            elif isinstance(base, ast.Name):
                if self.fn is not None:
                    self.facts.add(self.facts.globals, (self.path, base.id),
                                   step(join(taint, self.ctrl(), self.reached()),
                                        f"{base.id} changed at {self.site(target)}"))
            elif isinstance(base, ast.Attribute):
                self.attribute_set(base, taint, None)

    def attribute_set(self, target: ast.Attribute, taint: Taint, value) -> None:
        """``self.x = v``: the attribute, across the class's methods, takes ``v``'s taint,
        the conditions in force, and the taint of this method being reached."""
        key = (self.path, target.attr)
        if isinstance(value, ast.expr):
            self.facts.define(key, value)
        if self.fn is not None and self.fn.is_constructor:
            self.built_here[target.attr] = join(self.built_here.get(target.attr, EMPTY), taint)
        # A flag or counter set to a constant records that this code ran: it is as
        # rank-local as the code's being reached (the sticky flag set on a request's arrival).
        event = isinstance(value, ast.Constant) or isinstance(self.current, ast.AugAssign)
        control = join(self.ctrl(), self.reached() if event else EMPTY)
        # An object built under a rank-local test (``if first_stage: self.cache = Cache()``),
        # or any part a constructor builds for this rank's share of the deployment, differs
        # by rank in whether it exists (``nulls``), not in what it holds.
        # A part of it changed (``self.x[k] = v``, ``self.x.y = v``: ``value`` None) holds
        # ``v``'s data; the conditions decide only a value that replaces the whole.
        structure = _object(value) or (self.fn is not None and self.fn.is_constructor)
        taint = join(taint, EMPTY if structure or value is None else control)
        shown = self.text(value) if isinstance(value, ast.expr) else "changed"
        fn = self.fn
        where = f"{fn.name}({', '.join(fn.own_params)})" if fn else "module"
        said = f"self.{target.attr} set {shown} at {self.site(target)} in {where}"
        self.facts.add(self.facts.attrs, key, step(taint, said))
        if value is None:
            return                          # a part changed: None-ness and fields stay
        # Whether it is None: decided by where it is set, not by what a built object holds.
        built = _constructed(value)
        null = value is not None and (built or isinstance(value, (ast.Constant, ast.List,
                                                                 ast.Dict, ast.Tuple)))
        self.facts.add(self.facts.nulls, key, step(control if null else taint, said))
        if built:
            self.facts.mark_built(key)
        if built:
            for kw in value.keywords:       # a field of a built object: its own argument
                if kw.arg is not None:
                    self.facts.add(self.facts.fields, (*key, kw.arg),
                                   step(join(self.expr(kw.value), control), said))
