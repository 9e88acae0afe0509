"""Where a value comes from: the origins that make it rank-local, and the groups on which.

A taint is a frozenset of ``Origin``. An origin names what was read (``get_rank()``, a clock,
a parameter that carries a rank's own input, an exception), where, the chain of steps by which
it reached the value (``self._flag set True at f.py:12 in m(req)``), and the groups on which
it differs between members. Rank identities, clocks, randomness, caught exceptions, per-rank
files and memory differ on every group. A rank's own inputs (requests, batches, token counts)
are the same on the members of one attention-TP or context-parallel group, and on a TP group
when attention DP is off; they differ across DP ranks and reach the stages of a pipeline at
different iterations. A consensus collective on a group makes its result uniform there
(``sanitised``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

EVERY = frozenset({"world", "tp", "pp", "dp", "ep", "cp", "attn_tp", "other"})
INPUT_GROUPS = frozenset({"world", "tp", "pp", "dp", "ep", "other"})
SUBGROUPS = {"world": EVERY, "tp": frozenset({"tp", "attn_tp"})}
MAX_ORIGINS = 6                 # per value: enough to explain, bounded for the fixpoint
MAX_CHAIN = 6                   # steps of one origin's chain

Taint = frozenset


@dataclass(frozen=True)
class Origin:
    """One reason a value may differ between the members of a group."""

    kind: str                   # rank | input | clock | random | exception | file | memory
    what: str                   # the read, as the source says it
    site: str                   # path:line of the read
    groups: frozenset = EVERY   # groups on which it differs
    chain: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind={self.kind!r}; expected one of {', '.join(KINDS)}")

    def step(self, text: str) -> "Origin":
        """The origin with one more step of its chain (kept to ``MAX_CHAIN``)."""
        if len(self.chain) >= MAX_CHAIN or (self.chain and self.chain[-1] == text):
            return self
        return Origin(self.kind, self.what, self.site, self.groups, self.chain + (text,))

    def describe(self) -> str:
        """``what (kind, site)`` then the chain: how the report prints it."""
        head = f"{self.what} ({KINDS[self.kind]}, {self.site})"
        return " -> ".join((head, *self.chain))


KINDS = {"rank": "the rank's identity", "input": "a rank's own input",
         "clock": "a clock", "random": "a random draw", "exception": "a caught exception",
         "file": "a per-rank file", "memory": "the rank's own memory or device state"}

EMPTY: Taint = frozenset()


def origin(kind: str, what: str, site: str) -> Taint:
    """A taint of one fresh origin."""
    return frozenset({Origin(kind, what, site, INPUT_GROUPS if kind == "input" else EVERY)})


def join(*taints: Taint) -> Taint:
    """The union, bounded to ``MAX_ORIGINS`` (one of each kind first, then by site)."""
    out = None
    for t in taints:
        if t:
            # the common case, nothing or one taint, gives it as it is; two or more a new set
            out = t if out is None else out | t
    if out is None:
        return EMPTY
    if len(out) <= MAX_ORIGINS:
        return out
    ranked = sorted(out, key=lambda o: (o.kind, o.site, o.what, o.chain))
    kept, kinds = [], set()
    for o in ranked:
        if o.kind not in kinds:
            kept.append(o)
            kinds.add(o.kind)
    for o in ranked:
        if len(kept) >= MAX_ORIGINS:
            break
        if o not in kept:
            kept.append(o)
    return frozenset(kept[:MAX_ORIGINS])


def step(taint: Taint, text: str) -> Taint:
    """Every origin with one more chain step."""
    return frozenset(o.step(text) for o in taint)


def sanitised(taint: Taint, group: str) -> Taint:
    """What stays rank-local after a consensus collective on ``group``: the result is the
    same on every member of the group (and of its subgroups)."""
    gone = SUBGROUPS.get(group, frozenset({group}))
    out = set()
    for o in taint:
        left = o.groups - gone
        if left:
            out.add(o if left == o.groups else replace(o, groups=frozenset(left)))
    return frozenset(out)


def local_on(taint: Taint, group: str, attention_dp: bool) -> tuple[Origin, ...]:
    """The origins by which a value differs between the members of ``group`` (an unknown
    group is judged for the world). A rank's inputs differ on a TP group only when attention
    DP can put several DP ranks in it (``attention_dp``)."""
    out = []
    for o in taint:
        if group not in o.groups and not (group == "world" and o.groups):
            continue
        if o.kind == "input" and group == "tp" and not attention_dp:
            continue
        out.append(o)
    return tuple(sorted(out, key=lambda o: (len(o.chain), o.kind != "rank", o.site, o.what,
                                            o.chain)))


def assumption(origins: tuple[Origin, ...], group: str, attention_dp: bool) -> str:
    """The assumption the judgement used, in one sentence."""
    if group == "world":
        return "the collective's group is the world (or not known): judged for every rank"
    if any(o.kind == "input" for o in origins):
        if group == "tp":
            return ("attention DP can be on here: the TP group then spans DP ranks, which "
                    "hold different requests")
        return (f"a rank's own inputs differ on the {group} group (DP ranks hold different "
                "requests; pipeline stages see them at different iterations)")
    return f"judged for the {group} group"
