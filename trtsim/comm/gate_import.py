"""Gates of the ``gates_in`` modules first imported during a flip launch: an import hook.

Modules already imported when the launch starts are rewritten in place (``gate_rewrite``);
one a rank imports later is compiled from its source with its gates wrapped, as pytest's
import hook rewrites assertions (never from cached bytecode, which has no wrappers). When the
launch ends, the hook goes and the modules it loaded get their functions' code as written
back (a module's top-level code ran rewritten once: what it decided then stays decided).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

from .gate_rewrite import GATE_FN, LOOP_FN, compile_source, swap_codes
from .launch_config import NOT_GATED, in_package


class GateImporter(importlib.abc.MetaPathFinder):
    """Finds the ``prefixes``' modules from source and loads them with gates wrapped."""

    def __init__(self, prefixes: tuple[str, ...], sites: list, control):
        self.prefixes, self.sites, self.control = prefixes, sites, control
        self.loaded: list[str] = []

    def find_spec(self, name, path=None, target=None):
        if not in_package(name, self.prefixes) or in_package(name, NOT_GATED):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or type(spec.loader) is not importlib.machinery.SourceFileLoader:
            return None                       # C extensions, namespace packages: as they are
        spec.loader = _GatedLoader(spec.loader.name, spec.loader.path, self)
        return spec

    def undo(self) -> None:
        """The loaded modules' functions back to their code as written."""
        for name in self.loaded:
            module = sys.modules.get(name)
            path = getattr(module, "__file__", None)
            if module is None or not path:
                continue
            with open(path, "rb") as f:
                code = compile_source(f.read(), path, None)
            if code is not None:
                swap_codes(module, code)
            vars(module).pop(GATE_FN, None)
            vars(module).pop(LOOP_FN, None)


class _GatedLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, name: str, path: str, importer: GateImporter):
        super().__init__(name, path)
        self.importer = importer

    def get_code(self, fullname):
        code = compile_source(self.get_data(self.path), self.path, self.importer.sites)
        return code if code is not None else super().get_code(fullname)

    def exec_module(self, module: types.ModuleType) -> None:
        namespace = vars(module)
        namespace[GATE_FN], namespace[LOOP_FN] = self.importer.control.gate, \
            self.importer.control.loop
        self.importer.loaded.append(module.__name__)
        super().exec_module(module)
