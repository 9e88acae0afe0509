"""A context object filled in place (SGLang's ``runtime_context._PARALLEL`` shape): a slotted
instance of the package's own class, named by two modules."""


class Context:
    __slots__ = ("values",)

    def __init__(self):
        self.values = {}


class Sentinel:
    """No state: stays one object for every rank (identity checks keep working)."""


_CTX = Context()
MISSING = Sentinel()


def context() -> Context:
    return _CTX
