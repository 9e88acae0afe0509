"""Which topologies a test runs on: ``"all"``, a list of ids, a predicate, or a filter string.

A filter is comma-separated conditions, all of which must hold::

    "pp>1"                  either instance has pp > 1
    "gen.tp>=4,ctx.pp==1"   the generation instance has tp >= 4 and the context one pp == 1
    "world<=8"              ctx and gen together have at most 8 ranks
    "adp", "gen.adp", "mla" attention DP (on either instance / the named one), MLA

Quantities are ``tp``, ``pp``, ``cp`` and ``world`` (per instance, or both together for
``world``); a quantity without ``ctx.``/``gen.`` holds if it holds on either instance.
"""

from __future__ import annotations

import operator
import re

_OPS = {"==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
        ">": operator.gt, "<": operator.lt}
_CONDITION = re.compile(r"^(?:(ctx|gen)\.)?(tp|pp|cp|world)\s*(==|!=|>=|<=|>|<)\s*(\d+)$")
_FLAG = re.compile(r"^(?:(ctx|gen)\.)?(adp|mla)$")
_SIZE = {"tp": "tp_size", "pp": "pp_size", "cp": "cp_size", "world": "world_size"}


def _instances(dep, role: str | None) -> list:
    return [getattr(dep, role)] if role else [dep.ctx, dep.gen]


def parse_filter(text: str):
    """A predicate on a Deployment from a filter string; ValueError naming the bad part."""
    tests = []
    for part in (p.strip() for p in text.split(",")):
        cond, flag = _CONDITION.match(part), _FLAG.match(part)
        if cond:
            role, qty, op, value = cond.groups()
            cmp, value = _OPS[op], int(value)
            if qty == "world" and role is None:
                tests.append(lambda d, c=cmp, v=value: c(d.world_size, v))
            else:
                tests.append(lambda d, r=role, q=_SIZE[qty], c=cmp, v=value: any(
                    c(getattr(i, q), v) for i in _instances(d, r)))
        elif flag:
            role, name = flag.groups()
            attr = "enable_attention_dp" if name == "adp" else "is_mla"
            tests.append(lambda d, r=role, a=attr: any(getattr(i, a) for i in _instances(d, r)))
        else:
            raise ValueError(f"{part!r} is neither a topology id nor a filter condition "
                             "(e.g. 'pp>1', 'gen.tp>=4', 'world<=8', 'adp', 'mla')")
    return lambda dep: all(t(dep) for t in tests)


def select_topologies(arg) -> list[str]:
    """The topology ids ``arg`` selects, in the table's order; ValueError for an unknown id
    or a malformed filter."""
    from ..layout.topology import topologies, topology

    known = topologies()
    if arg is None or arg == "all":
        return known
    if callable(arg):
        return [t for t in known if arg(topology(t))]
    if isinstance(arg, str) and arg not in known:
        keep = parse_filter(arg)
        chosen = [t for t in known if keep(topology(t))]
        if not chosen:
            raise ValueError(f"filter {arg!r} selects no topology")
        return chosen
    ids = [arg] if isinstance(arg, str) else list(arg)
    unknown = [t for t in ids if t not in known]
    if unknown:
        raise ValueError(f"unknown topology {unknown[0]!r} (trtsim topologies lists them)")
    return ids
