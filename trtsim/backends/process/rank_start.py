"""A process rank's start-up, the same for every way a process becomes a rank (spawned by the
launcher, started by torchrun, started by mpirun): its Distributed over its transport, and
the rank program run inside the launch's interception and iteration marker.

A rank spawned by the launcher and a rank started by torchrun also join torch.distributed
the same way (``join_default_group``, ``build_groups``, ``start_rank``): the default process
group (the one the script made, under torchrun, is used as it is), trtsim's groups over it,
a handshake on the world group, and the guarded transport over the rank's ledger. Only where
the rendezvous comes from (the launcher's store, or env://) and which ledger backs the rank
(shared memory, or the store) differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable

import torch
import torch.distributed as tdist

from ...layout.places import RankPlace
from ... import intercept
from ...comm import markers
from ...comm.current import bind
from ...comm.distributed import Distributed, Transport
from ...calls.errors import CollectiveError
from ...comm.gate_control import installed as gates_installed
from ...comm.gate_record import GateRecorder
from ...comm.gate_watch import watch_gates
from ...comm.origin import OriginFinder, call_rank_program
from . import call_log_writer, logged
from .ledger_contract import RankLedger
from .torch_ops import MessageRecords, TorchGroup
from .transport import TorchTransport

if TYPE_CHECKING:
    from ...comm.launch_config import LaunchConfig


@dataclass(frozen=True)
class GroupPlan:
    """How a rank's process groups are made: the default group's backend (``gloo``, or
    ``cpu:gloo,cuda:nccl``), the device its tensors live on, and whether CUDA tensors travel
    through the host (a rank without a GPU of its own on an NCCL launch)."""

    backend: str
    device: torch.device
    stage_cuda: bool


def join_default_group(plan: GroupPlan, timeout: float, store: Any = None, rank: int = -1,
                       world: int = -1) -> bool:
    """Select the rank's GPU and make the default process group: over ``store`` as ``rank``
    of ``world`` (the launcher's rendezvous), or from env:// (torchrun's). A default group
    the script made already is used as it is. Whether trtsim made it (and must end it)."""
    if plan.device.type == "cuda":
        torch.cuda.set_device(plan.device)
    if tdist.is_initialized():
        return False
    wait = timedelta(seconds=timeout + 30)
    if store is None:
        tdist.init_process_group(plan.backend, init_method="env://", timeout=wait)
    else:
        tdist.init_process_group(plan.backend, store=store, rank=rank, world_size=world,
                                 timeout=wait)
    return True


def build_groups(group_table: dict, pg_backend: str,
                 stage_cuda: bool) -> dict[str, TorchGroup]:
    """Create every group of every instance (all ranks call new_group in the same order) and
    return this rank's groups by kind. Host objects always get a gloo communicator."""
    me = tdist.get_rank()
    separate_obj = pg_backend != "gloo"
    mine: dict[str, TorchGroup] = {}
    for (_instance, kind), groups in sorted(group_table.items()):
        for ranks in groups:
            tensor_pg = tdist.new_group(list(ranks))
            obj_pg = tdist.new_group(list(ranks), backend="gloo") if separate_obj else tensor_pg
            if me in ranks:
                mine[kind] = TorchGroup(ranks, obj_pg, tensor_pg, stage_cuda)
    return mine


@dataclass(frozen=True)
class StartedRank:
    """What a process rank runs on: its guarded transport and its Distributed over it."""

    transport: TorchTransport
    dist: Distributed


def start_rank(rank: int, places: list[RankPlace], groups: dict[str, TorchGroup],
               plan: GroupPlan, ledger: RankLedger, logger: call_log_writer.CallLogger | None,
               config: LaunchConfig,
               report: Callable[[CollectiveError], None]) -> StartedRank:
    """Connect this rank (its ``groups`` built, every rank's ``ledger`` row published) and
    build its transport and Distributed: ``report`` is where a report this rank finds goes."""
    # Group creation may finish at different times; nobody starts (or finishes and leaves)
    # before every communicator is connected.
    tdist.all_reduce(torch.zeros(1), group=groups["world"].obj)
    messages = MessageRecords(tdist.distributed_c10d._get_default_store())  # noqa: SLF001
    transport = TorchTransport(rank, logged.logged_ledger(ledger, logger), groups,
                               config.policy, plan.device, report, config.clock_model,
                               messages)
    return StartedRank(transport, rank_distributed(places[rank], transport, logger, config))


def rank_distributed(place: RankPlace, transport: TorchTransport,
                     logger: call_log_writer.CallLogger | None, config: LaunchConfig,
                     wrappers: tuple[str, ...] = ()) -> Distributed:
    """This process's Distributed: ``transport``, logged when the launch keeps call logs
    (``logger``), bound as the current rank. ``wrappers`` are frames of the way the rank was
    started that are no part of a purpose."""
    used: Transport = transport if logger is None else logged.LoggedTransport(transport,
                                                                                logger)
    dist = Distributed(place, used, OriginFinder(config.wrappers + tuple(wrappers)))
    bind(dist, whole_process=True)
    return dist


def run_program(dist: Distributed, config: LaunchConfig,
                load: Callable[[], tuple[Callable, tuple]],
                keep_gates: Callable[[list], None] | None = None) -> Any:
    """Run the rank program that ``load`` gives (program, args) with the launch's stand-ins
    and marker installed; ``load`` runs after the stand-ins, so the program's modules import
    them. With gates, the rank's gate posts go to the launch's gate folder, or to
    ``keep_gates`` (a torchrun job's store: ``external.store_gates``) when given."""
    with intercept.installed(config.intercept) as interception:
        interception.attach(dist)
        program, args = load()
        with markers.installed(config.iteration_marker), \
                gates_installed(config, program) as control:
            gate_dir = config.gate_dir
            keeps = config.flip is None and (gate_dir is not None or keep_gates is not None)
            recorder = GateRecorder() if keeps else None
            watch_gates([dist], config, control, recorder)
            result = call_rank_program(program, dist, args)
            if recorder is not None and keep_gates is not None:
                keep_gates(recorder.rows)
            elif recorder is not None and gate_dir is not None:
                recorder.save(gate_dir, dist.global_rank)
            return result
