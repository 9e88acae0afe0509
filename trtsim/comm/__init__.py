"""Communication: the Distributed API and what every backend shares around it.

``distributed`` (one rank's communicator, TRT-LLM's names) builds a ``CallRecord`` for every
call and hands it to its ``Transport`` (a backend's: ``trtsim.backends``), which asks the
``guard`` before the real call runs. Around it: ``origin`` (call sites and purposes),
``markers`` (iterations), ``current`` (the rank a piece of code runs for), ``scoped_install``
(counted patching), ``launch_config`` (``LaunchConfig``), ``outcome`` (what a launch brings
back), ``real_collectives`` (the torch calls trtsim issues itself) and ``reissue`` (a
replay's rank program). Imports ``guard``, ``calls``, ``timeline`` and ``layout`` only.
"""

from ..layout.places import Peer
from .distributed import Distributed
from ..calls.errors import (
           CollectiveDeadlock,
           CollectiveError,
           CollectiveMismatch,
           CollectiveTimeout,
           RankFailed,
)
from ..calls.records import CallRecord

__all__ = ["Distributed", "Peer", "CallRecord", "CollectiveError", "CollectiveMismatch",
           "CollectiveDeadlock", "CollectiveTimeout", "RankFailed"]
