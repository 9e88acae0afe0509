"""``lint(paths)``: load, walk every function until the facts stop growing, judge."""

from __future__ import annotations

import ast
import time

from .config import LintConfig, load_config
from .facts import Facts
from .flow import Flow
from .judge import judge
from .load import load
from .program import Program
from .reach import Reaches

MAX_ROUNDS = 8


def analyse(program: Program, config: LintConfig, skipped: list | None = None
            ) -> tuple[Facts, int]:
    """The program-wide facts, grown to a fixpoint (or ``MAX_ROUNDS`` rounds), and the
    rounds it took. The first round walks every module's top level and every function; a
    later one what read a fact that grew. A function nested too deep to walk (an expression
    of thousands of terms) is left out and named in ``skipped``."""
    facts = Facts()
    _mark_called(program, facts)
    walks = [(m, None) for m in program.modules] + \
        [(fn.module, fn) for fn in program.functions.values()]
    reads: dict[int, set] = {}
    rounds = 0
    todo = list(range(len(walks)))
    while todo and rounds < MAX_ROUNDS:
        rounds += 1
        facts.changed, facts.grown = False, set()
        for i in todo:
            module, fn = walks[i]
            flow = Flow(program, module, fn, facts, config)
            try:
                flow.run()
            except RecursionError:
                where = fn.site(fn.node) if fn is not None else module.path
                if skipped is not None and rounds == 1:
                    skipped.append(f"{where}: nested too deep to follow; left out")
            reads[i] = flow.reads
        grown = facts.grown
        # the next round walks again only what read something that grew
        todo = [i for i in range(len(walks)) if not reads[i].isdisjoint(grown)]
    return facts, rounds


def _mark_called(program: Program, facts: Facts) -> None:
    """Which functions have a caller in the analysed code, known before the first walk: a
    parameter of one of them is what its callers pass, never an outside input."""
    from .reach import _walk_calls
    for fn in program.functions.values():
        for call in _walk_calls(fn.node):
            for callee in program.resolve(call, fn):
                facts.called.add(callee.key)
    for module in program.modules:
        for call in _walk_calls(module.tree):
            if isinstance(call.func, ast.Name):
                own = program.module_functions.get(module.path, {}).get(call.func.id)
                if own is not None:
                    facts.called.add(own.key)


def lint(paths: list[str], config: LintConfig | None = None):
    """Lint the Python files under ``paths``; a ``LintResult``. ``ValueError`` (its
    ``LintInputError`` among them) for input the lint cannot read."""
    from .findings import LintResult
    t0 = time.perf_counter()
    config = load_config(paths) if config is None else config
    modules, skipped = load(paths)
    program = Program(modules)
    if config.attention_dp is not None:
        program.attention_dp = config.attention_dp
    skipped = list(skipped)
    facts, rounds = analyse(program, config, skipped)
    reaches = Reaches(program, facts, config.collectives)
    findings, suppressed = judge(program, facts, reaches)
    collectives = sum(1 for fn in program.functions.values() for _call, rs in
                      reaches.sites(fn) if any(not r.via for r in rs))
    return LintResult(tuple(findings), tuple(suppressed), len(modules),
                      len(program.functions), collectives, tuple(skipped), rounds,
                      round(time.perf_counter() - t0, 3))
