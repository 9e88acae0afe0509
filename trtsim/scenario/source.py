"""Reading scenario files: YAML with 1.2 booleans, dotted-key overrides, one-line errors."""

from __future__ import annotations

import copy
import os
import re
import stat

import yaml

from ..checks import (MAX_DEPTH, MAX_SCENARIO_BYTES, MAX_SCENARIO_NODES, depth_within,
                      expanded_size, excerpt)
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


def _unique_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    """A mapping whose keys are unique: YAML says so, PyYAML keeps the last silently."""
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (str, int, float, bool)) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {excerpt(key)}", key_node.start_mark)
        seen.add(key) if isinstance(key, (str, int, float, bool)) else None
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def yaml_problem(exc: yaml.YAMLError) -> str:
    """One line for a YAML error: where and what (``line 3: duplicate key 'seed'``)."""
    mark = getattr(exc, "problem_mark", None)
    what = getattr(exc, "problem", None) or getattr(exc, "reason", None) or str(exc)
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return f"{where}not valid YAML ({' '.join(str(what).split())})"


def parse_value(text: str):
    """A ``--set key=value`` value, read as YAML (numbers, lists, null) with 1.2 booleans;
    ScenarioError (one line) when it is not YAML."""
    try:
        return _read_yaml("", text)
    except yaml.YAMLError as exc:
        raise ScenarioError(yaml_problem(exc).replace("line 1: ", "")) from None


def set_dotted(raw: dict, key: str, value) -> None:
    """Apply one override ``a.b.c = value`` to a raw scenario mapping."""
    parts = key.split(".")
    node = raw
    for p in parts[:-1]:
        child = node.get(p)
        if child is None:
            child = node[p] = {}
        if not isinstance(child, dict):
            raise ScenarioError(f"override {key}: {excerpt(p)} is not a section")
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
    raw = _read_yaml(path, _read_text(path))
    if not isinstance(raw, dict):
        raise ScenarioError(f"{path}: the top level must be a mapping, not {type(raw).__name__}")
    return raw, path


def _read_text(path: str) -> str:
    """A scenario file's text: a regular file, not too large, UTF-8; else one line."""
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise ScenarioError(f"{path}: is a directory, not a scenario file")
        if not stat.S_ISREG(info.st_mode):
            raise ScenarioError(f"{path}: not a regular file (a scenario is a YAML file)")
        if info.st_size > MAX_SCENARIO_BYTES:
            raise ScenarioError(f"{path}: {info.st_size:,} bytes, more than the limit of "
                                f"{MAX_SCENARIO_BYTES:,} bytes for a scenario file")
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not a text file (byte {exc.start} is not UTF-8); a "
                            "scenario is a YAML file") from None
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read ({exc.strerror})") from None


def _read_yaml(path: str, text: str):
    """The YAML of ``text``, its shape bounded; ``path`` names it in errors ("" for a value
    of the command line, whose YAML errors are the caller's to word)."""
    try:
        _nesting(path, text)                    # before the composer recurses into it
        raw = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        if not path:
            raise
        raise ScenarioError(f"{path}: {yaml_problem(exc)}") from None
    path = path or "the value"
    # aliases reuse what an anchor made: a few lines can stand for deep or vast values (a
    # billion laughs), which any later walk (a message, a copy, a JSON document) would expand
    if not depth_within(raw, MAX_DEPTH):
        raise ScenarioError(f"{path}: its aliases nest values more than {MAX_DEPTH} deep")
    if expanded_size(raw, MAX_SCENARIO_NODES) > MAX_SCENARIO_NODES:
        raise ScenarioError(f"{path}: its aliases expand to more than {MAX_SCENARIO_NODES:,} "
                            "values, past the limit for a scenario")
    return raw


def _nesting(path: str, text: str) -> None:
    """Containers nested more than ``MAX_DEPTH`` deep are refused, read from the parser's
    events (which do not recurse)."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ScenarioError(f"{path}: line {event.start_mark.line + 1}: values nested "
                                    f"more than {MAX_DEPTH} deep, past the limit for a "
                                    "scenario")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def with_overrides(source, overrides: dict | None) -> tuple[dict, str]:
    """``load_raw`` with dotted-key overrides applied."""
    raw, name = load_raw(source)
    for key, value in (overrides or {}).items():
        set_dotted(raw, key, value)
    return raw, name
