"""Validation shared by the configuration dataclasses: errors name the field and the value."""

from __future__ import annotations

import functools
import typing


def require_int(name: str, value, low: int = 1) -> None:
    """``ValueError("name=value must be an integer >= low")`` unless ``value`` is one."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")


def require_ints(obj, *names: str, low: int = 1) -> None:
    """``require_int`` for several fields of a (frozen) config object."""
    for name in names:
        require_int(name, getattr(obj, name), low)


@functools.lru_cache(maxsize=None)
def field_types(cls) -> dict:
    """The resolved annotations of a dataclass's fields (string annotations evaluated)."""
    return typing.get_type_hints(cls)


def choices(cls, name: str) -> tuple:
    """The values a ``Literal``-typed field admits: the one list of its choices."""
    return typing.get_args(field_types(cls)[name])


def require_choices(obj) -> None:
    """``ValueError("name='x'; expected one of a, b")`` for a Literal-typed field of ``obj``
    holding a value its annotation does not list."""
    for name, hint in field_types(type(obj)).items():
        if typing.get_origin(hint) is typing.Literal:
            value = getattr(obj, name)
            if value not in typing.get_args(hint):
                raise ValueError(f"{name}={value!r}; expected one of "
                                 f"{', '.join(map(str, typing.get_args(hint)))}")
