"""The gate model: an ``if`` whose body leaves through a ``with`` block (``if t: with ctx:
return f()``, vLLM's model runner under ``skip_dp_coordination()``) is an early exit, so
the rest of its block is reached only with the test false."""

import contextlib

from trtsim.gates import gates_at


def _runner(num_tokens, idle_skips):
    if num_tokens == 0 and idle_skips:
        with contextlib.nullcontext():
            return "skipped"
    return "coordinated"


def test_rest_of_the_block_is_gated_by_the_exit():
    code = _runner.__code__
    last = code.co_firstlineno + 4                    # return "coordinated"
    gates = gates_at(code, last)
    assert [(g.kind, g.condition, g.outcome_at(last)) for g in gates] == [
        ("exit", "num_tokens == 0 and idle_skips", False)]
