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

import sys
import types

from ...comm.import_hook import AfterImport

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


def install(swaps: dict[int, tuple]) -> tuple:
    """``swaps``: id(real function) -> (real function, stand-in). Rebinds the loaded modules
    and hooks later imports; what ``uninstall`` takes."""
    done = []
    for name, module in list(sys.modules.items()):
        if module is not None and _ours(name):
            done += rebind(module, swaps)
    finder = AfterImport(_ours, lambda module: rebind(module, swaps))
    sys.meta_path.insert(0, finder)
    return finder, done


def uninstall(held: tuple) -> None:
    finder, done = held
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for module, name, value in done:
        setattr(module, name, value)
