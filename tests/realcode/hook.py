"""The mechanism of the realcode tests' import hook (the stubs themselves, and the hook's
entry point, are ``stubs.py``).

``WheelFinder`` (first on ``sys.meta_path``) loads a module under an extracted package's top
name (``vllm``, ``sglang``, ``msgspec``) from the files extracted from its wheel, never from an
installed copy, unless a stub names it; a module that is neither extracted nor stubbed is a
``ModuleNotFoundError`` naming tests/realcode (their code treats that as an optional module
being absent, as on a machine without it). ``AbsentFinder`` (last) stands in for third-party
packages that their module level imports but this environment lacks; it is asked after every
other finder, so an installed package always wins, and it answers their imports (and these
tests') only. Its stand-ins leave ``sys.modules`` once the outermost framework import is done
and after every realcode test (``conftest``): other code in the process -- mypy probing for
orjson, torch for triton -- sees the machine as it is. A stub's module is a package: its
submodules are stubs too, unless the stub replaces only the package's ``__init__``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


class StubCalled(RuntimeError):
    """Code called a placeholder of a stubbed module: its path needs the real one."""


class Placeholder:
    """An attribute of an absent package: fits where module-level code puts it (an
    annotation ``X | None``, ``X[int]``, a base class, a decorator factory's attribute),
    raises StubCalled when called."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise StubCalled(f"{self._name} was called, but it is a placeholder of "
                         "tests/realcode/stubs.py (the package is not installed here)")

    def __or__(self, other):
        return self

    __ror__ = __or__

    def __getitem__(self, item):
        return self

    def __mro_entries__(self, bases):
        return (object,)

    def __repr__(self) -> str:
        return f"<placeholder {self._name}>"


class AbsentModule(types.ModuleType):
    """A module of an absent third-party package: every attribute is a Placeholder."""

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self.__name__}.{attr}")


@dataclass(frozen=True)
class Stub:
    """One stubbed module: why, and how its stand-in is filled in (``None``: placeholders).
    ``init_only``: only the package's ``__init__`` is replaced; its submodules are real."""

    why: str
    fill: Callable[[types.ModuleType], None] | None = None
    init_only: bool = False


class _StubLoader(importlib.abc.Loader):
    def __init__(self, stub: Stub, path: list[str], placeholders: bool):
        self.stub, self.path, self.placeholders = stub, path, placeholders

    def create_module(self, spec):
        module = (AbsentModule if self.placeholders else types.ModuleType)(spec.name)
        module.__path__ = self.path                  # [] : its submodules are stubs too
        return module

    def exec_module(self, module) -> None:
        module.__doc__ = f"Stub of tests/realcode/stubs.py: {self.stub.why}"
        if self.stub.fill is not None:
            self.stub.fill(module)


def _stub_spec(name: str, stub: Stub, path: list[str], placeholders: bool):
    loader = _StubLoader(stub, path, placeholders)
    return importlib.machinery.ModuleSpec(name, loader, is_package=True)


def _stub_of(name: str, table: dict[str, Stub]) -> Stub | None:
    """The stub of ``name``: its own entry, or its nearest stubbed package's."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        stub = table.get(".".join(parts[:cut]))
        if stub is not None and (cut == len(parts) or not stub.init_only):
            return stub
    return None


class WheelFinder(importlib.abc.MetaPathFinder):
    """Modules of the packages extracted from wheels: their files, or their stubs."""

    def __init__(self, roots: dict[str, Path], stubs: dict[str, Stub],
                 absent: "AbsentFinder | None" = None):
        self.roots = dict(roots)                     # top package -> extraction root
        self.stubs = stubs
        self.absent = absent

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in self.roots:
            return None
        base = self.roots[top] / name.replace(".", "/")
        stub = _stub_of(name, self.stubs)
        if stub is not None:
            return _stub_spec(name, stub, [str(base)] if stub.init_only else [],
                              placeholders=stub.fill is None)
        # the top package in its root only; a submodule in its parent's __path__ (the root)
        search = [str(self.roots[top])] if path is None else path
        spec = importlib.machinery.PathFinder.find_spec(name, search)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {name!r} (neither extracted from the "
                                      f"{top} wheel nor stubbed: tests/realcode)", name=name)
        if self.absent is not None and spec.loader is not None:
            spec.loader = _Forgetting(spec.loader, self.absent)
        return spec


_IMPORTLIB = str(Path(importlib.__file__).parent)
_HERE = str(Path(__file__).parent)              # tests/realcode: the tests ask for stubs too


def _importer_file() -> str:
    """The file of the code whose import is being resolved (importlib's frames skipped)."""
    frame = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_code.co_filename.startswith(_IMPORTLIB)
                                 or frame.f_code.co_filename == __file__):
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else ""


class AbsentFinder(importlib.abc.MetaPathFinder):
    """Third-party packages this environment lacks (asked after every other finder), for the
    frameworks' own imports only: anyone else importing one (mypy probing for orjson, torch
    for triton) gets the ModuleNotFoundError of a machine without it."""

    def __init__(self, absent: dict[str, Stub], roots: dict[str, Path]):
        self.absent, self.roots = absent, roots

    def find_spec(self, name, path=None, target=None):
        stub = _stub_of(name, self.absent)
        if stub is None or not self._framework_importing():
            return None
        # an absent package's module: what the stand-in does not fill is a placeholder
        return _stub_spec(name, stub, [], placeholders=True)

    def _framework_importing(self) -> bool:
        where = _importer_file()
        return where.startswith(_HERE) or any(where.startswith(str(root))
                                              for root in self.roots.values())

    def forget(self) -> None:
        """Take the absent packages' stand-ins out of ``sys.modules``: the frameworks'
        modules keep the ones they imported, and nobody else finds them there."""
        for name in [n for n, m in list(sys.modules.items())
                     if _stub_of(n, self.absent) is not None and isinstance(
                         getattr(getattr(m, "__spec__", None), "loader", None), _StubLoader)]:
            del sys.modules[name]


class _Forgetting(importlib.abc.Loader):
    """A framework module's own loader, which takes the absent stand-ins out of
    ``sys.modules`` once the outermost framework import is done (``AbsentFinder.forget``)."""

    depth = 0            # framework imports in progress (they nest)

    def __init__(self, inner, absent: AbsentFinder):
        self.inner, self.absent = inner, absent

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module) -> None:
        _Forgetting.depth += 1
        try:
            self.inner.exec_module(module)
        finally:
            _Forgetting.depth -= 1
            if _Forgetting.depth == 0:
                self.absent.forget()


def install(roots: dict[str, Path], stubs: dict[str, Stub], absent: dict[str, Stub]) -> None:
    """Load ``roots``' packages (top package -> extracted root) through the hook, from now
    on in this process. Idempotent; a later call adds roots."""
    for finder in sys.meta_path:
        if isinstance(finder, WheelFinder):
            finder.roots.update(roots)
            break
    else:
        wheels = WheelFinder(roots, stubs)
        wheels.absent = AbsentFinder(absent, wheels.roots)   # the same roots, as they grow
        sys.meta_path.insert(0, wheels)
        sys.meta_path.append(wheels.absent)


def forget_absent() -> None:
    """Take the absent packages' stand-ins out of ``sys.modules`` (after a test that ran the
    frameworks' code, which may import one lazily)."""
    for finder in sys.meta_path:
        if isinstance(finder, AbsentFinder):
            finder.forget()
