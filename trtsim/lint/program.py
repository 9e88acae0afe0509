"""The analysed code: its files, functions and classes, and which definitions a call reaches.

Resolution is by name, as a reader of the source resolves it: ``self.m()`` to ``m`` of the
class, its bases or the subclasses that define it; ``f()`` to the module's own ``f`` or the
one its imports name; ``mod.f()`` to ``f`` of that module; ``obj.m()`` on anything else to the
methods named ``m`` when at most ``MAX_CANDIDATES`` classes define one (a common name would tie
every caller to every definition). Calls outside the analysed code resolve to nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ..gates.model import function_gates
from .collectives import is_collective
from .sources import selects_one
from ..gates.source import SourceText

MAX_CANDIDATES = 2
# A method that a builtin value also has (``m.group()`` of a regex match, ``d.get()``,
# ``s.split()``) is never resolved by its name alone: the receiver is most likely that value.
_BUILTIN_METHODS = frozenset(name for kind in (str, bytes, list, dict, set, tuple, int, float,
                                               type(re.match("", "")), type(re.compile("")))
                             for name in dir(kind))
CONSTRUCTORS = frozenset({"__init__", "__post_init__", "__new__", "__init_subclass__",
                          "setUp", "setup", "__enter__", "__set_name__"})


@dataclass
class Module:
    """One parsed file."""

    path: str                       # as the report prints it
    name: str                       # dotted module name (a package's: pkg.__init__)
    text: str
    tree: ast.Module
    src: SourceText
    suppressions: dict
    imports: dict = field(default_factory=dict)     # local name -> (module, name or None)


@dataclass
class Function:
    """One function or method (a code object the lint follows)."""

    key: str                        # path::qualname
    name: str
    qualname: str
    node: ast.AST
    module: Module
    cls: str | None                 # the class's qualname, for a method
    params: tuple[str, ...]
    _gates: tuple | None = None
    calls: list | None = None       # its calls in source order (``reach.calls_of``)

    @property
    def is_method(self) -> bool:
        return self.cls is not None and not _static(self.node)

    @property
    def is_constructor(self) -> bool:
        return self.name in CONSTRUCTORS

    @property
    def own_params(self) -> tuple[str, ...]:
        """The parameters a caller passes (``self``/``cls`` left out)."""
        return self.params[1:] if self.is_method else self.params

    def site(self, node: ast.AST) -> str:
        return f"{self.module.path}:{node.lineno}"

    def gates(self):
        """The function's gates (``trtsim.gates``), found once."""
        if self._gates is None:
            self._gates = function_gates(self.node.body, self.module.path, self.module.src,
                                         self.module.suppressions)
        return self._gates


@dataclass
class Class:
    """A class: its bases by name and its methods."""

    qualname: str
    module: Module
    bases: tuple[str, ...]
    methods: dict = field(default_factory=dict)


def _static(node: ast.AST) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod"
               for d in getattr(node, "decorator_list", ()))


def _params(node) -> tuple[str, ...]:
    a = node.args
    names = [p.arg for p in (*a.posonlyargs, *a.args)]
    if a.vararg:
        names.append(a.vararg.arg)
    names += [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        names.append(a.kwarg.arg)
    return tuple(names)


class Program:
    """Every module, function and class of the analysed paths, and name resolution."""

    def __init__(self, modules: list[Module]):
        self.modules = modules
        self.functions: dict[str, Function] = {}
        self.classes: dict[str, Class] = {}
        self.by_name: dict[str, list[Function]] = {}
        self.module_functions: dict[str, dict[str, Function]] = {}
        self.classes_by_name: dict[str, list[Class]] = {}
        self.methods_by_name: dict[str, list[Function]] = {}
        self.by_module: dict[str, Module] = {m.name: m for m in modules}
        self._suffixes: dict[str, list[Module]] = {}
        self._exact: dict[str, list[Module]] = {}
        for m in modules:
            self._exact.setdefault(m.name.removesuffix(".__init__"), []).append(m)                      # every dotted tail of every module's name
            parts = m.name.removesuffix(".__init__").split(".")
            for i in range(len(parts)):
                self._suffixes.setdefault(".".join(parts[i:]), []).append(m)
        self.subclasses: dict[str, list[Class]] = {}
        self._family: dict[str, list[Class]] = {}
        self._family_paths: dict = {}
        self._resolved: dict = {}
        self._ops: dict = {}
        self._splits: dict = {}
        for module in modules:
            self._index(module)
        for classes in self.classes_by_name.values():
            for c in classes:
                for base in c.bases:
                    self.subclasses.setdefault(base, []).append(c)
        self.attention_dp = any("attention_dp" in m.text or "dp_attention" in m.text
                                for m in modules)

    def _index(self, module: Module) -> None:
        own = self.module_functions.setdefault(module.path, {})
        stack = [(module.tree.body, "", None)]
        while stack:
            body, prefix, cls = stack.pop()
            for node in body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    _imports(node, module)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qual = prefix + node.name
                    fn = Function(f"{module.path}::{qual}", node.name, qual, node, module,
                                  cls.qualname if cls else None, _params(node))
                    self.functions[fn.key] = fn
                    self.by_name.setdefault(node.name, []).append(fn)
                    if cls is not None:
                        cls.methods[node.name] = fn
                        self.methods_by_name.setdefault(node.name, []).append(fn)
                    elif not prefix:
                        own[node.name] = fn
                    stack.append((node.body, qual + ".<locals>.", None))
                elif isinstance(node, ast.ClassDef):
                    qual = prefix + node.name
                    info = Class(f"{module.path}::{qual}", module,
                                 tuple(_base_name(b) for b in node.bases))
                    self.classes[info.qualname] = info
                    self.classes_by_name.setdefault(node.name, []).append(info)
                    stack.append((node.body, qual + ".", info))
                elif isinstance(node, (ast.If, ast.Try, ast.With)):
                    for part in ("body", "orelse", "finalbody"):
                        stack.append((getattr(node, part, []), prefix, cls))
                    for handler in getattr(node, "handlers", ()):
                        stack.append((handler.body, prefix, cls))

    def modules_named(self, dotted: str) -> list[Module]:
        """The analysed modules whose name is ``dotted`` or ends with it, or whose whole name
        ``dotted`` ends with (the files were given from inside their package)."""
        found = list(self._suffixes.get(dotted, ()))
        parts = dotted.split(".")
        for i in range(1, len(parts)):
            found += self._exact.get(".".join(parts[i:]), [])
        return found

    def family_paths(self, path: str, cls_key: str | None) -> set:
        """The files of a class's family (where its attributes may be set)."""
        key = (path, cls_key)
        if key not in self._family_paths:
            self._family_paths[key] = {path} | {c.module.path for c in self.family(cls_key)}
        return self._family_paths[key]

    def family(self, cls_key: str) -> list[Class]:
        """A class, its bases (by name, transitively) and the classes deriving from it."""
        if cls_key in self._family:
            return self._family[cls_key]
        self._family[cls_key] = found = self._family_of(cls_key)
        return found

    def _family_of(self, cls_key: str) -> list[Class]:
        start = self.classes.get(cls_key)
        if start is None:
            return []
        out, todo = [], [start]
        while todo and len(out) < 32:
            c = todo.pop()
            if c in out:
                continue
            out.append(c)
            for base in c.bases:
                todo += self.classes_by_name.get(base, [])
        short = start.qualname.rsplit("::", 1)[1].rsplit(".", 1)[-1]
        out += [c for c in self.subclasses.get(short, []) if c not in out][:16]
        return out

    def resolve(self, call: ast.Call, caller: Function) -> tuple[Function, ...]:
        """The analysed definitions a call may run (see the module note); once per call."""
        key = id(call)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(call, caller)
        return self._resolved[key]

    def splits(self, test: ast.expr) -> bool:
        """``sources.selects_one(test)``, decided once per test."""
        key = id(test)
        if key not in self._splits:
            self._splits[key] = selects_one(test)
        return self._splits[key]

    def op_of(self, call: ast.Call, extra: frozenset, text) -> str | None:
        """``collectives.is_collective`` of a call, decided once per call (``extra`` is the
        one list of the analysis; ``text`` renders a node of the call's module)."""
        key = id(call)
        if key not in self._ops:
            self._ops[key] = is_collective(call, extra, text)
        return self._ops[key]

    def _resolve(self, call: ast.Call, caller: Function) -> tuple[Function, ...]:
        func = call.func
        if isinstance(func, ast.Name):
            own = self.module_functions.get(caller.module.path, {}).get(func.id)
            if own is not None:
                return (own,)
            origin = caller.module.imports.get(func.id)
            if origin is not None:
                return self._from_module(origin[0], origin[1] or func.id)
            return ()
        if not isinstance(func, ast.Attribute):
            return ()
        base, name = func.value, func.attr
        if isinstance(base, ast.Name) and caller.is_method and base.id == caller.params[0] \
                or _is_super(base):
            found = [c.methods[name] for c in self.family(caller.cls) if name in c.methods]
            return tuple(found[:4])
        if isinstance(base, ast.Name) and base.id in caller.module.imports:
            mod, sub = caller.module.imports[base.id]
            return self._from_module(mod + ("." + sub if sub else ""), name)
        if name in _BUILTIN_METHODS:
            return ()
        found = self.methods_by_name.get(name, [])
        return tuple(found) if len(found) <= MAX_CANDIDATES else ()

    def _from_module(self, module: str, name: str) -> tuple[Function, ...]:
        for mod in self.modules_named(module):
            fn = self.module_functions.get(mod.path, {}).get(name)
            if fn is not None:
                return (fn,)
        return ()


def _is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "super"


def _base_name(node: ast.expr) -> str:
    while isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return node.id if isinstance(node, ast.Name) else ""


def _imports(node, module: Module) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            module.imports[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0], None)
        return
    base = node.module or ""
    if node.level:
        parts = module.name.split(".")[:-node.level] if module.name else []
        base = ".".join([*parts, base] if base else parts)
    for alias in node.names:
        module.imports[alias.asname or alias.name] = (base, alias.name)
