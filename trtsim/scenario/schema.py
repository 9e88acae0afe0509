"""Scenario sections from the configuration dataclasses themselves (one field list).

A section of a scenario file is built into a frozen dataclass: its known keys are the
dataclass's fields, its types their annotations, its help their ``metadata["help"]``. Field
metadata may rename the YAML key (``key``), hide a field that is set by the scenario, not
the user (``internal``), or ``flatten`` a nested dataclass so its keys sit in the same
section (a perf instance's ``tp``/``pp`` next to its ``servers``). Value checks stay in
each dataclass's ``__post_init__``; their ``ValueError`` becomes one line naming file, key
and value. ``convert`` turns a YAML shorthand into the field's type, ``type`` says in words
what the key takes.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

from ..checks import MAX_ERROR_LINE, excerpt, field_types


class ScenarioError(ValueError):
    """Bad scenario input: the message is one line naming file, key and value (at most
    ``MAX_ERROR_LINE`` characters, whatever the value quoted)."""

    def __init__(self, message: str):
        super().__init__(bounded(message))


def bounded(message: str) -> str:
    """An error message of bounded length."""
    text = str(message)
    return text if len(text) <= MAX_ERROR_LINE else text[:MAX_ERROR_LINE - 3] + "..."


def err(source: str, key: str, value, reason: str) -> ScenarioError:
    return ScenarioError(f"{source}: {key}: {excerpt(value)} {reason}")


def section(source: str, raw: dict, key: str) -> dict:
    """``raw[key]`` as a mapping ({} when absent)."""
    value = raw.get(key, {}) or {}
    if not isinstance(value, dict):
        raise err(source, key, value, "must be a mapping")
    return value


def yaml_key(f: dataclasses.Field) -> str:
    return f.metadata.get("key", f.name)


def user_fields(cls) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(cls) if f.init and not f.metadata.get("internal")]


def known_keys(cls) -> list[str]:
    """Every YAML key of a section built into ``cls`` (flattened fields included; a field
    spelled two ways lists both in ``metadata["keys"]``)."""
    out = []
    for f in user_fields(cls):
        if f.metadata.get("flatten"):
            out.extend(known_keys(field_types(cls)[f.name]))
        else:
            out.extend(f.metadata.get("keys", (yaml_key(f),)))
    return out


def check_keys(cls, raw: dict, source: str, prefix: str = "") -> None:
    """Every key of ``raw`` must be a YAML key of ``cls``: else one line naming it."""
    known = known_keys(cls)
    for k in raw:
        if k not in known:
            raise err(source, f"{prefix}{k}", raw[k],
                      f"is not a known key (known: {', '.join(sorted(known))})")


def _type_name(hint) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(map(str, args))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in args)
    if origin is tuple:
        return "a list"
    return {int: "int", float: "a finite number", bool: "bool", str: "str",
            type(None): "null"}.get(hint, getattr(hint, "__name__", str(hint)))


def _fits(value, hint) -> bool:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any or hint is object:
        return True
    if origin is typing.Literal:
        return isinstance(value, str) or value in args     # the dataclass names the choices
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return len(value) == len(args) and all(_fits(v, a) for v, a in zip(value, args))
    if hint is type(None):
        return value is None
    if hint is float:           # YAML's .inf and .nan are no sizes, rates or seconds
        return isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _frozen(value):
    """YAML lists become tuples (the dataclasses are frozen and hashable)."""
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def build(cls, values: dict, source: str, key: str, **fixed: Any):
    """``cls`` from a section's mapping, every key checked; ``fixed`` fields are set by the
    scenario (they are not YAML keys)."""
    check_keys(cls, values, source, f"{key}.")
    return _construct(cls, values, source, key, fixed)


def _construct(cls, values: dict, source: str, key: str, fixed: dict):
    hints = field_types(cls)
    kwargs = dict(fixed)
    for f in user_fields(cls):
        hint = hints[f.name]
        if f.metadata.get("flatten"):
            sub = {k: values[k] for k in known_keys(hint) if k in values}
            kwargs[f.name] = _construct(hint, sub, source, key, {})
            continue
        name = yaml_key(f)
        if name not in values:
            continue
        if dataclasses.is_dataclass(hint) and isinstance(values[name], dict):
            kwargs[f.name] = build(hint, values[name], source, f"{key}.{name}")
            continue
        value = _frozen(values[name])
        convert = f.metadata.get("convert")
        if convert is not None:
            value = convert(value)
        if not _fits(value, hint):
            raise err(source, f"{key}.{name}", values[name],
                      f"must be {f.metadata.get('type') or _type_name(hint)}")
        kwargs[f.name] = value
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        text = str(exc)
        bad = next((yaml_key(f) for f in user_fields(cls) if text.startswith(f"{f.name}=")),
                   None)
        raise ScenarioError(f"{source}: {key}.{bad}: {text}" if bad else
                            f"{source}: {key}: {text}") from None


def scalar(cls, name: str, raw: dict, source: str):
    """A top-level scalar of a scenario (a field of ``cls``): its YAML value checked against
    the field's annotation (a Literal's choices, int, a number, str), or the field's default."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    key = yaml_key(f)
    if key not in raw:
        return f.default
    value, hint = raw[key], field_types(cls)[name]
    if typing.get_origin(hint) is typing.Literal:
        if value not in typing.get_args(hint):
            raise err(source, key, value, f"is not one of {', '.join(typing.get_args(hint))}")
    elif not _fits(value, hint):
        raise err(source, key, value, f"must be {_type_name(hint)}")
    return value


def describe(cls, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) of every YAML key of ``cls``: the schema as documentation."""
    rows = []
    hints = field_types(cls)
    for f in user_fields(cls):
        if f.metadata.get("flatten"):
            rows.extend(describe(hints[f.name], prefix))
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else "required")
        default = f.metadata.get("shown_default", default)   # a default the loader applies
        key = " | ".join(prefix + k for k in f.metadata.get("keys", (yaml_key(f),)))
        rows.append((key, f.metadata.get("type") or _type_name(hints[f.name]),
                     repr(default),
                     f.metadata.get("help", "")))
    return rows
