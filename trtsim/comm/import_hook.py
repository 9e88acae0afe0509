"""Hearing of a module as soon as it has run: an import hook for the length of a launch.

``AfterImport`` sits first on ``sys.meta_path``; for a module whose name it wants, it asks the
finders after it for the spec and wraps the spec's loader, so that ``ran(module)`` is called
right after the module's code has run (its globals as the module itself bound them). Every
other module, and a spec without ``exec_module``, is left as the other finders make it.
"""

from __future__ import annotations

import importlib.abc
import sys
import types
from typing import Callable


class AfterImport(importlib.abc.MetaPathFinder):
    """``wants(name)``: whether to hear of that module; ``ran(module)``: called once it ran."""

    def __init__(self, wants: Callable[[str], bool],
                 ran: Callable[[types.ModuleType], object]):
        self.wants, self.ran = wants, ran

    def find_spec(self, name, path, target=None):
        if not self.wants(name):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self.ran)
                return spec
        return None


class _Loader(importlib.abc.Loader):
    def __init__(self, inner, ran: Callable[[types.ModuleType], object]):
        self.inner, self.ran = inner, ran

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        self.inner.exec_module(module)
        self.ran(module)

    def __getattr__(self, name):          # get_resource_reader, is_package, get_code, ...
        return getattr(self.inner, name)
