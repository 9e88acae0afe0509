"""The gate model: which conditions decide whether a line of Python is reached.

One home for gates, shared by the source lint (``trtsim lint``) and a run-time observer: a
gate is the test of an enclosing ``if``/``elif``/``while``, a conditional expression, a
comprehension filter, the iteration of an enclosing ``for`` loop, or an earlier
``if ...: return|continue|break|raise`` in a block the line was reached past. A gate is named by
its site (``path:line``) and its condition's source text, carries its operands (names, attribute
chains, subscripts by constants, ``len()`` of those, both sides of comparisons) as text and as
compiled expressions, and the suppression comment on its line, if any
(``# trtsim: uniform(tp) -- reason``).

The wing sits at the bottom of the house (it imports only ``checks``/``safe_write``), so the
communication wing's guard can use it: ``gates_for(code)`` answers per code object from a cache,
with no parse per call, and ``gates_at(code, line)`` keeps the gates that enclose one line.
"""

from .model import Gate, Operand, function_gates, enclosing
from .runtime import gates_at, gates_for
from .suppress import Suppression, parse_suppression, suppressions_in

__all__ = ["Gate", "Operand", "function_gates", "enclosing", "gates_at", "gates_for",
           "Suppression", "parse_suppression", "suppressions_in"]
