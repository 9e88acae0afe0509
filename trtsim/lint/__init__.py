"""``trtsim lint``: collectives gated by rank-local state, found in the source before anything
runs.

Design. For each collective call, the conditions that decide whether it is reached are the
gates of ``trtsim.gates`` (the one model the run-time observer shares), followed across calls
within the analysed code: a helper that issues a collective makes its callers' conditions gates
too (``reach``). Whether a gate is rank-local is a question of where its operands come from,
answered by a flow analysis over the whole program (``flow``/``values``, grown to a fixpoint
in ``facts``): rank identities, a rank's own inputs (parameters of code called from outside
the analysed code, and what is computed from them), clocks, randomness, caught exceptions,
per-rank files and memory start a taint (``origins``); assignments carry it, and so do the
conditions in force when an attribute, a global or a ``ContextVar`` is set (the sticky flag);
a consensus collective's result is uniform on its group; sizes and configuration are uniform
(``sources``). The judgement is per group (``judge``): a rank's own requests differ on DP and
PP groups, and on a TP group only where attention DP can be on. Findings are typed
(``findings``) and printed as text, JSON or SARIF 2.1 (``report``).

Built on the standard ``ast``: docs/LINT.md compares it with astroid, libcst and beniget on
the whole vLLM package and says why.
"""

from .analysis import lint
from .config import LintConfig, load_config
from .findings import CollectiveSite, Finding, GateSite, LintResult, SuppressedGate
from .load import LintInputError

__all__ = ["lint", "LintConfig", "load_config", "CollectiveSite", "Finding", "GateSite",
           "LintResult", "SuppressedGate", "LintInputError"]
