"""Iterations without ``set_iteration``: each entry of a marker function starts the calling
rank's next iteration (``launch(..., iteration_marker="pkg.module:Class.method")``).

The marker is looked up by its module path and installed as a wrapper on its owner (the class
or the module) for the length of the launch, then restored. Calls before the first entry are
iteration 0; the n-th entry starts iteration n. Code that imported the function by name before
the launch (``from mod import fn``) keeps the unwrapped one: name a method, or a function
looked up through its module. A module first imported during the launch that bound the wrapped
function by name holds the unwrapped one after it (``scoped_install``).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import inspect
import os
import sys

from .current import current
from .scoped_install import Originals, scoped


def resolve(spec: str):
    """(owner, attribute name, raw attribute) of ``"pkg.module:Qual.name"``; ValueError
    naming what is missing."""
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise ValueError(f"iteration_marker={spec!r} must read 'pkg.module:function' or "
                         "'pkg.module:Class.method'")
    owner = _main_if_same(module_name)
    if owner is None:
        try:
            owner = importlib.import_module(module_name)
        except ImportError as exc:
            raise ValueError(f"iteration_marker={spec!r}: cannot import {module_name!r} "
                             f"({exc})") from None
    parts = qualname.split(".")
    for part in parts[:-1]:
        if not hasattr(owner, part):
            raise ValueError(f"iteration_marker={spec!r}: {owner!r} has no attribute {part!r}")
        owner = getattr(owner, part)
    try:
        raw = inspect.getattr_static(owner, parts[-1])
    except AttributeError:
        raise ValueError(f"iteration_marker={spec!r}: {owner!r} has no attribute "
                         f"{parts[-1]!r}") from None
    func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    if not callable(func):
        raise ValueError(f"iteration_marker={spec!r}: {parts[-1]!r} is not a function")
    return owner, parts[-1], raw


def _main_if_same(module_name: str):
    """The running script's module when ``module_name`` names its file: a script run as
    ``python my_job.py`` is ``__main__``, and importing ``my_job`` again would give a second
    copy whose classes the script never uses."""
    main = sys.modules.get("__main__")
    if module_name == "__main__" or module_name in sys.modules:
        return sys.modules.get(module_name)
    path = getattr(main, "__file__", None)
    if not path:
        return None
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    if spec is not None and spec.origin and os.path.realpath(spec.origin) == os.path.realpath(path):
        return main
    return None


def _marked(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dist = current()
        if dist is not None:
            dist.set_iteration(dist.iteration + 1)
        return func(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def installed(spec: str | None):
    """Wrap the marker for the duration of the block (nothing when ``spec`` is None);
    launches that name one marker at once share one install (``scoped_install``)."""
    if spec is None:
        yield
        return
    with scoped(f"iteration_marker:{spec}", lambda: _install(spec), _uninstall, _originals):
        yield


def _install(spec: str):
    owner, name, raw = resolve(spec)
    wrapped: object
    if isinstance(raw, staticmethod):
        wrapped = staticmethod(_marked(raw.__func__))
    elif isinstance(raw, classmethod):
        wrapped = classmethod(_marked(raw.__func__))
    else:
        wrapped = _marked(raw)
    # A module function is looked up in its __globals__. In a spawned rank those are not
    # the main script's module dict: multiprocessing runs the script with runpy.run_path and
    # copies the names into a fresh __mp_main__ module, so its functions still see the
    # run_path namespace. Patch that namespace too.
    namespaces = [vars(owner)] if inspect.ismodule(owner) else []
    scope = getattr(raw, "__globals__", None)
    if namespaces and scope is not None and scope is not namespaces[0] and scope.get(name) is raw:
        namespaces.append(scope)
    setattr(owner, name, wrapped)
    for scope in namespaces[1:]:
        scope[name] = wrapped
    return owner, name, raw, namespaces, wrapped


def _uninstall(held) -> None:
    owner, name, raw, namespaces, _wrapped = held
    setattr(owner, name, raw)
    for scope in namespaces[1:]:
        scope[name] = raw


def _originals(held) -> Originals:
    """The wrapper -> the marker function, for modules that bound it by name meanwhile."""
    _owner, _name, raw, _namespaces, wrapped = held
    fn = getattr(wrapped, "__func__", wrapped)          # a staticmethod's, a classmethod's
    real = getattr(raw, "__func__", raw)
    return {id(fn): (fn, lambda _bound_as: real)}
