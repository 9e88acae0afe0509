"""Names the other module's context object directly."""

from tests.rank_state.context import MISSING, _CTX as CTX


def same_context() -> bool:
    from tests.rank_state import context
    return CTX is context.context() and MISSING is context.MISSING
