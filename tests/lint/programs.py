"""Programs for the lint, generated from a few choices: the two shapes of the corpus's
incidents (a rank's own input that gates a DP all-reduce; a sticky flag set per request that
gates a PP allgather), written with renamed variables, aliases, the gate 1-3 helpers deep, the
collective 1-3 helpers deep, negated or positive gate forms, and methods split between a base
class and its subclass. Each program knows its answer: the line of the gate the lint must
report, or None for a fixed or legal variant."""

from __future__ import annotations

import keyword
from dataclasses import dataclass

from trtsim.lint.sources import option_name, rank_name, uniform_name

SHAPES = ("input", "sticky")
VARIANTS = ("incident", "fixed", "legal")
FORMS = ("exit", "negated_exit", "if", "negated_if")


def usable(name: str) -> bool:
    """A name the generator may give a variable: no keyword or builtin, and none of the
    names the lint reads by kind (ranks, sizes, configuration, options)."""
    return (name.isidentifier() and not keyword.iskeyword(name) and name not in dir(__builtins__)
            and not rank_name(name) and not uniform_name(name) and not option_name(name)
            and name not in ("self", "dist", "torch", "group", "req"))


@dataclass(frozen=True)
class Choice:
    """One program's choices."""

    shape: str
    variant: str
    names: tuple[str, ...]          # at least 8 distinct usable names
    gate_depth: int                 # helpers computing the gated value (0-3)
    call_depth: int                 # helpers between the gate and the collective (1-3)
    aliases: int                    # copies of the gated value (0-2)
    form: str
    split: bool                     # helpers in a base class


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.marked: int | None = None

    def add(self, text: str, mark: bool = False) -> None:
        for line in text.splitlines():
            self.lines.append(line)
        if mark:
            self.marked = len(self.lines) - (len(text.splitlines()) - 1)


def generate(c: Choice) -> tuple[str, int | None]:
    """(source, the gate line the lint must report or None)."""
    n = list(c.names)
    w = _Writer()
    w.add("import torch\nimport torch.distributed as dist\n")
    helpers = _helpers(c, n)
    if c.split:
        w.add("class Base:")
        for text in helpers:
            w.add(text)
        w.add(f"\nclass {n[0].capitalize()}Runner(Base):")
    else:
        w.add(f"class {n[0].capitalize()}Runner:")
        for text in helpers:
            w.add(text)
    w.add(_constructor(c, n))
    _entry(c, n, w)
    source = "\n".join(w.lines) + "\n"
    return source, (w.marked if c.variant == "incident" else None)


def _constructor(c: Choice, n: list[str]) -> str:
    flag = n[1]
    return ("    def __init__(self, mapping, dp_group):\n"
            "        self.mapping = mapping\n"
            "        self.dp_group = dp_group\n"
            f"        self._{flag} = False\n"
            "        self._need_pp_sync = mapping.pp_size > 1\n")


def _helpers(c: Choice, n: list[str]) -> list[str]:
    out = []
    # the collective, call_depth helpers down
    for i in range(c.call_depth):
        name, nxt = f"_sync{i}", f"_sync{i + 1}"
        if i + 1 < c.call_depth:
            out.append(f"    def {name}(self, {n[2]}):\n        return self.{nxt}({n[2]})\n")
        elif c.shape == "input":
            out.append(f"    def {name}(self, {n[2]}):\n"
                       f"        {n[3]} = torch.tensor([{n[2]}])\n"
                       f"        dist.all_reduce({n[3]}, group=self.dp_group)\n"
                       f"        return {n[3]}\n")
        else:
            out.append(f"    def {name}(self, {n[2]}):\n"
                       f"        if self._need_pp_sync:\n"
                       f"            return self.pp_allgather({n[2]})\n"
                       f"        return [{n[2]}]\n")
    # the gated value, gate_depth helpers deep
    for i in range(c.gate_depth):
        name, nxt = f"_value{i}", f"_value{i + 1}"
        if i + 1 < c.gate_depth:
            out.append(f"    def {name}(self, {n[4]}):\n        return self.{nxt}({n[4]})\n")
        elif c.shape == "input":
            out.append(f"    def {name}(self, {n[4]}):\n"
                       f"        return {n[4]}.total_num_scheduled_tokens\n")
        else:
            out.append(f"    def {name}(self, {n[4]}):\n        return self._{n[1]}\n")
    if c.shape == "sticky":
        # the flag is set in a helper of the method that opens a session for a request
        out.append(f"    def open_session(self, {n[5]}):\n"
                   f"        self._{n[6]}({n[5]})\n\n"
                   f"    def _{n[6]}(self, {n[5]}):\n"
                   f"        self._{n[1]} = True\n"
                   f"        return {n[5]}\n")
    if c.variant == "fixed" and c.shape == "input":
        out.append(f"    def _agree(self, {n[7]}):\n"
                   f"        {n[3]} = torch.tensor([{n[7]}])\n"
                   f"        dist.all_reduce({n[3]}, group=self.dp_group)\n"
                   f"        return int({n[3]}.sum())\n")
    return out


def _entry(c: Choice, n: list[str], w: _Writer) -> None:
    param = n[4]
    w.add(f"    def step(self, {param}):")
    if c.variant == "legal":
        value = "self.mapping.world_size"
    elif c.shape == "input":
        value = f"self._value0({param})" if c.gate_depth else \
            f"{param}.total_num_scheduled_tokens"
    else:
        value = f"self._value0({param})" if c.gate_depth else f"self._{n[1]}"
    if c.variant == "fixed" and c.shape == "input":
        value = f"self._agree({value})"
    current = value
    for i in range(c.aliases):
        w.add(f"        {n[7]}{i} = {current}")
        current = f"{n[7]}{i}"
    # the test that skips the collective, in the polarity the form asks for
    if c.shape == "input" or c.variant == "legal":
        skip = f"{current} == 0" if c.variant != "legal" else f"{current} == 1"
    else:
        skip = f"not {current}"
        if c.variant == "fixed":
            skip = f"not {current} and not self._need_pp_sync"
    call = f"self._sync0({param})"
    if c.form == "exit":
        w.add(f"        if {skip}:", mark=True)
        w.add(f"            return None\n        return {call}")
    elif c.form == "negated_exit":
        w.add(f"        if not ({skip}):", mark=True)
        w.add(f"            return {call}\n        return None")
    elif c.form == "if":
        w.add(f"        if {skip}:", mark=True)
        w.add(f"            {n[2]} = None\n        else:\n            {n[2]} = {call}\n"
              f"        return {n[2]}")
    else:
        w.add(f"        if not ({skip}):", mark=True)
        w.add(f"            {n[2]} = {call}\n        else:\n            {n[2]} = None\n"
              f"        return {n[2]}")
