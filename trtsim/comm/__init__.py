"""Communication: the Distributed API, its backends and the collective-symmetry guard.

``distributed`` (one rank's communicator, TRT-LLM's names) builds a ``CallRecord`` for every
call and hands it to a backend's transport: ``inproc`` (all ranks in this process) or
``process`` (torch.distributed in spawned processes, or under torchrun). Both ask the same
``guard`` before the real call runs. ``launcher.run_ranks`` picks the backend. Imports only
the layout and timeline wings.
"""

from ..layout.places import Peer
from .distributed import Distributed
from .errors import (
           CollectiveDeadlock,
           CollectiveError,
           CollectiveMismatch,
           CollectiveTimeout,
           RankFailed,
)
from .records import CallRecord

__all__ = ["Distributed", "Peer", "CallRecord", "CollectiveError", "CollectiveMismatch",
           "CollectiveDeadlock", "CollectiveTimeout", "RankFailed"]
