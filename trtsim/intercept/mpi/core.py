"""What the stand-in communicator's mixins are written on.

``communicator.Intracomm`` is one class made of three mixins (object collectives, buffer
collectives, point-to-point) around its core: who the caller is (``_me``), the one guarded
path of every collective (``_coll``), root checking and the real communicator under mpirun.
The core is declared here, for the type checker, and defined in ``communicator``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..rank_api import Comm
    from .run import MPIRank


class CommCore:
    """The part of ``Intracomm`` its mixins call."""

    # The communicator's members. None only on MPI.COMM_NULL, where every call's ``_me``
    # raises before a mixin reads it: the mixins see a live one.
    _comm: Comm

    if TYPE_CHECKING:
        def _me(self, what: str) -> tuple[MPIRank, int]: ...
        def _real_comm(self, state: MPIRank) -> Any: ...
        def _root(self, root: Any, what: str) -> int: ...
        def Get_size(self) -> int: ...

        def _coll(self, what: str, op: str, payload: Any, root: int | None = None,
                  reduce_op: str | None = None, args: tuple = (),
                  finish: Callable[[Any], Any] | None = None, target: Any = None) -> Any: ...
