"""Reading scenario files: YAML with 1.2 booleans, dotted-key overrides, one-line errors."""

from __future__ import annotations

import copy
import os
import re

import yaml

from .schema import ScenarioError
from .shipped import scenario_path


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans only: ``off``/``on``/``yes``/``no`` stay strings (sticky_skip: off)."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()}
for _first in "tTfF":
    _Loader.yaml_implicit_resolvers.setdefault(_first, []).insert(0, (
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")))


def parse_value(text: str):
    """A ``--set key=value`` value, read as YAML (numbers, lists, null) with 1.2 booleans."""
    return yaml.load(text, Loader=_Loader)


def set_dotted(raw: dict, key: str, value) -> None:
    """Apply one override ``a.b.c = value`` to a raw scenario mapping."""
    parts = key.split(".")
    node = raw
    for p in parts[:-1]:
        child = node.get(p)
        if child is None:
            child = node[p] = {}
        if not isinstance(child, dict):
            raise ScenarioError(f"override {key}: {p!r} is not a section")
        node = child
    node[parts[-1]] = value


def find_scenario(source) -> str:
    """A scenario file's path: ``source`` itself when it exists, else the shipped scenario of
    that name (``kv_transfer``), so names work from any working directory."""
    path = os.fspath(source)
    if os.path.exists(path):
        return path
    shipped = scenario_path(path) or (scenario_path(os.path.basename(path))
                                      if os.path.dirname(path) == "scenarios" else None)
    if shipped is None:
        raise ScenarioError(f"{path}: no such scenario file, nor a shipped scenario of that "
                            f"name (trtsim scenarios lists them)")
    return str(shipped)


def load_raw(source) -> tuple[dict, str]:
    """The raw mapping of a scenario file, a shipped scenario's name, or a dict given
    directly; and its name."""
    if isinstance(source, dict):
        return copy.deepcopy(source), "<dict>"
    path = find_scenario(source)
    try:
        with open(path) as f:
            raw = yaml.load(f, Loader=_Loader)
    except (FileNotFoundError, IsADirectoryError):
        raise ScenarioError(f"{path}: no such scenario file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "?"
        raise ScenarioError(f"{path}: {where}: not valid YAML ({getattr(exc, 'problem', exc)})") \
            from None
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: the top level must be a mapping, not {type(raw).__name__}")
    return raw, path


def with_overrides(source, overrides: dict | None) -> tuple[dict, str]:
    """``load_raw`` with dotted-key overrides applied."""
    raw, name = load_raw(source)
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    return raw, name
