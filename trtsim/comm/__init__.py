"""Communication: the Distributed API, its backends and the collective-symmetry guard."""

from .distributed import Distributed, Peer
from .errors import CollectiveDeadlock, CollectiveError, CollectiveMismatch, CollectiveTimeout, RankFailed
from .records import CallRecord

__all__ = ["Distributed", "Peer", "CallRecord", "CollectiveError", "CollectiveMismatch",
           "CollectiveDeadlock", "CollectiveTimeout", "RankFailed"]
