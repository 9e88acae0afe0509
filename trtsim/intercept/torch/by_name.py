"""torch.distributed's collectives that other torch modules imported by name, guarded too.

DTensor's ``torch/distributed/tensor/_collective_utils.py`` runs ``from
torch.distributed.distributed_c10d import scatter, broadcast``, and the functional
collectives keep c10d's functions as ``legacy_*`` names: swapping the names of the
``torch.distributed`` package does not reach them, so on the process backends their calls
would run unguarded (on inproc they reach the inproc group, guarded under another label). So
for the length of the install, every global of a ``torch.distributed`` module (other than
``distributed_c10d``, whose internals keep the real functions) that is one of the replaced
collective functions names its stand-in instead: in the modules loaded at the install, and
in those imported while it is held (an import hook; ``scoped_install.rebind_late_imports``
gives the latter the real functions back at the end). Which names and modules is found,
never listed: a module that imports a collective by name tomorrow is covered the same way.
"""

from __future__ import annotations

import importlib.abc
import sys
import types

PACKAGE = "torch.distributed"
KEEP = ("torch.distributed", "torch.distributed.distributed_c10d")   # their own names


def _ours(name: str) -> bool:
    return (name == PACKAGE or name.startswith(PACKAGE + ".")) and name not in KEEP


def rebind(module: types.ModuleType, swaps: dict[int, tuple]) -> list[tuple]:
    """Point ``module``'s globals that hold a replaced function at its stand-in; (module,
    name, the real function) of each, to restore."""
    done = []
    for name, value in list(vars(module).items()):
        hit = swaps.get(id(value))
        if hit is not None and hit[0] is value:
            setattr(module, name, hit[1])
            done.append((module, name, value))
    return done


class _Finder(importlib.abc.MetaPathFinder):
    """Rebinds each torch.distributed module imported while the install is held, as soon as
    it has run."""

    def __init__(self, swaps: dict[int, tuple]):
        self.swaps = swaps

    def find_spec(self, name, path, target=None):
        if not _ours(name):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self.swaps)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, swaps: dict[int, tuple]):
        self.inner, self.swaps = inner, swaps

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        rebind(module, self.swaps)

    def __getattr__(self, name):          # get_resource_reader, is_package, get_code, ...
        return getattr(self.inner, name)


def install(swaps: dict[int, tuple]) -> tuple:
    """``swaps``: id(real function) -> (real function, stand-in). Rebinds the loaded modules
    and hooks later imports; what ``uninstall`` takes."""
    done = []
    for name, module in list(sys.modules.items()):
        if module is not None and _ours(name):
            done += rebind(module, swaps)
    finder = _Finder(swaps)
    sys.meta_path.insert(0, finder)
    return finder, done


def uninstall(held: tuple) -> None:
    finder, done = held
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for module, name, value in done:
        setattr(module, name, value)
