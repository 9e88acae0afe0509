"""Generated rank programs with a gate at a random depth, for the latent-gate property test.

A drawn program has a chain of 1-4 helper frames down to a world all-reduce; one helper (at a
drawn depth) decides whether the call below it is made, by one gate form of the model (``if``,
``elif``, ``while``, ``for``, a conditional expression, a comprehension filter, an early
exit), on an alias (1-3 assignments deep, a name, an attribute or a dict entry) of a value
the program hands down. The value is the rank's own (different per rank, every one letting
the call through: latent), the same on every rank (legal), or the result of a MAX all-reduce
of the ranks' own values (a consensus: legal). ``gate_lines`` are the lines a latent answer
may name.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

FORMS = ("if", "elif", "while", "for", "ifexp", "filter", "exit")
KINDS = ("rank_local", "uniform", "consensus")
HOLDERS = ("name", "attribute", "entry")


@dataclass(frozen=True)
class GeneratedProgram:
    """A program's source, the answer observe must give, and what was drawn."""

    source: str
    latent: bool
    gate_lines: frozenset[int]
    ranks: int
    values: tuple[int, ...]
    form: str
    depth: int
    gate_depth: int


def _gate_body(form: str, cond: str, call: str) -> tuple[list[str], list[int]]:
    """The lines of a helper's body that gate ``call`` by ``cond``, and the indices (in
    those lines) of the gate's own lines."""
    if form == "if":
        return [f"if {cond}:", f"    return {call}", "return None"], [0]
    if form == "elif":
        return [f"if not ({cond}) and v < -100:", "    return None",
                f"elif {cond}:", f"    return {call}", "return None"], [0, 2]
    if form == "while":
        return ["i = 0", "out = None", f"while i < 1 and {cond}:", f"    out = {call}",
                "    i += 1", "return out"], [2]
    if form == "for":
        return ["out = None", f"for _ in range(min(v, 1) if {cond} else 0):",
                f"    out = {call}", "return out"], [1]
    if form == "ifexp":
        return [f"return {call} if {cond} else None"], [0]
    if form == "filter":
        return [f"return [{call} for _ in (0,) if {cond}]"], [0]
    return [f"if not ({cond}):", "    return None", f"return {call}"], [0]     # exit


@st.composite
def generated_programs(draw) -> GeneratedProgram:
    """A rank program with a known answer."""
    ranks = draw(st.integers(2, 4))
    depth = draw(st.integers(1, 4))
    gate_depth = draw(st.integers(1, depth))
    form = draw(st.sampled_from(FORMS))
    kind = draw(st.sampled_from(KINDS))
    holder = draw(st.sampled_from(HOLDERS))
    aliases = draw(st.integers(1, 3))
    if kind == "uniform":
        values = (draw(st.integers(1, 50)),) * ranks
    else:
        values = tuple(draw(st.lists(st.integers(1, 50), min_size=ranks, max_size=ranks,
                                     unique=True)))
    lines = ["class Holder:", "    def __init__(self, v):", "        self.v = v", "",
             "def h0(dist, x, v):", "    return dist.allreduce(x, label='generated')", ""]
    gate_lines: set[int] = set()
    for level in range(1, depth + 1):
        lines.append(f"def h{level}(dist, x, v):")
        call = f"h{level - 1}(dist, x, v)"
        if level == gate_depth:
            body = [{"name": "a0 = v", "attribute": "a0 = Holder(v)",
                     "entry": "a0 = {'n': v}"}[holder]]
            for k in range(1, aliases):
                body.append(f"a{k} = a{k - 1}")
            last = f"a{aliases - 1}"
            read = {"name": last, "attribute": f"{last}.v", "entry": f"{last}['n']"}[holder]
            gated, marks = _gate_body(form, f"{read} > 0", call)
            start = len(lines) + 1 + len(body)          # 1-based line of gated[0]
            gate_lines.update(start + m for m in marks)
            body += gated
        else:
            body = [f"return {call}"]
        lines += [f"    {b}" for b in body] + [""]
    consensus = "v = dist.allreduce(v, op='max', label='consensus')" if kind == "consensus" \
        else "pass"
    lines += ["def program(dist, values, steps):", "    out = []",
              "    for step in range(steps):", "        v = values[dist.global_rank]",
              f"        {consensus}", f"        out.append(h{depth}(dist, float(dist.global_rank), v))",
              "    return out", ""]
    return GeneratedProgram("\n".join(lines), kind == "rank_local", frozenset(gate_lines),
                            ranks, values, form, depth, gate_depth)
