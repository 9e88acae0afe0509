"""``lint(paths)``: load, walk every function until the facts stop growing, judge."""

from __future__ import annotations

import ast
import gc
import time

from .config import LintConfig, load_config
from .facts import Facts
from .flow import Flow
from .judge import judge
from .load import load
from .program import Program
from .reach import Reaches, _walk_calls, calls_of, collective_reach

MAX_ROUNDS = 8


def analyse(program: Program, config: LintConfig, skipped: list | None = None
            ) -> tuple[Facts, int]:
    """The program-wide facts, grown to a fixpoint (or ``MAX_ROUNDS`` rounds), and the
    rounds it took. The first round walks every module's top level and every function; a
    later one what read a fact that grew, of the walks the judgement can hear from
    (``relevant``). A function nested too deep to walk (an expression of thousands of terms)
    is left out and named in ``skipped``."""
    facts = Facts()
    _mark_called(program, facts)
    walks = [(m, None) for m in program.modules] + \
        [(fn.module, fn) for fn in program.functions.values()]
    reads: dict[int, set] = {}
    writes: dict[int, set] = {}
    rounds = 0
    todo = list(range(len(walks)))
    keep: set[int] | None = None
    while todo and rounds < MAX_ROUNDS:
        rounds += 1
        facts.changed, facts.grown = False, set()
        for i in todo:
            module, fn = walks[i]
            flow = Flow(program, module, fn, facts, config)
            facts.writes = set() if keep is None else None
            try:
                flow.run()
            except RecursionError:
                where = fn.site(fn.node) if fn is not None else module.path
                if skipped is not None and rounds == 1:
                    skipped.append(f"{where}: nested too deep to follow; left out")
            reads[i] = flow.reads
            if facts.writes is not None:
                writes[i] = facts.writes
        facts.writes = None
        if keep is None:
            keep = relevant(program, walks, reads, writes, config, id(facts.tests))
        grown = facts.grown
        # the next round walks again only what read something that grew
        todo = [i for i in range(len(walks)) if i in keep and not reads[i].isdisjoint(grown)]
    return facts, rounds


def relevant(program: Program, walks: list, reads: dict, writes: dict,
             config: LintConfig, tests: int) -> set[int]:
    """The walks whose results can reach the judgement: those of functions that reach a
    collective (their gates' tests are judged), and every walk that writes a fact one of
    those reads, transitively. Which facts a walk reads and writes is a property of its code
    (the keys, not what they hold), so one round tells; a walk outside this set only grows
    facts no judged test depends on, and is not repeated."""
    reaching = collective_reach(program, config.collectives)
    keep = {i for i, (_m, fn) in enumerate(walks) if fn is not None and fn.key in reaching}
    writers: dict = {}
    for i, keys in writes.items():
        for key in keys:
            writers.setdefault(key, []).append(i)
    # the judged tests (a gate's test is written by its own function's walk) and what the
    # kept walks read; then the writers of each, and what those read in turn
    keys = [key for i in keep for key in (*reads.get(i, ()), *(
        k for k in writes.get(i, ()) if k[0] == tests))]
    needed: set = set()
    while keys:
        key = keys.pop()
        if key in needed:
            continue
        needed.add(key)
        for j in writers.get(key, ()):
            if j not in keep:
                keep.add(j)
                keys.extend(reads.get(j, ()))
    return keep


def _mark_called(program: Program, facts: Facts) -> None:
    """Which functions have a caller in the analysed code, known before the first walk: a
    parameter of one of them is what its callers pass, never an outside input."""
    for fn in program.functions.values():
        for call in calls_of(fn):
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
    # The trees of a package are millions of objects that live for the whole run and make
    # no garbage: the cyclic collector's passes over them cost more than the parse itself.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _lint(paths, config)
    finally:
        if collecting:
            gc.enable()


def _lint(paths: list[str], config: LintConfig | None):
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
