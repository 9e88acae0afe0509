"""Interception is a scoped, counted install: launches in several threads share it and the
last one out restores torch.distributed and sys.modules' mpi4py; outside a rank the stand-ins
are the real thing; a module first imported inside a launch holds the real objects after it;
a rank that raises, or a real Ctrl-C, leaves nothing patched."""

import importlib.util
import os
import signal
import sys
import threading
import types

import pytest
import torch
import torch.distributed as tdist
import torch.distributed._functional_collectives as funcol

import trtsim
from trtsim.intercept.mpi.standin import standin_modules
from trtsim.comm.scoped_install import depth

pytestmark = pytest.mark.timeout(300)
BOTH = ("torch", "mpi")
MPI_MODULES = tuple(standin_modules())
HAS_MPI4PY = importlib.util.find_spec("mpi4py") is not None


def _originals() -> dict:
    """Every name interception replaces, and the object it names now."""
    out = {f"tdist.{n}": getattr(tdist, n) for n in dir(tdist) if not n.startswith("_")}
    out.update({f"funcol.{n}": getattr(funcol, n) for n in dir(funcol) if not n.startswith("_")})
    out.update({f"sys.modules[{n}]": sys.modules.get(n) for n in MPI_MODULES})
    return out


def _changed(before: dict) -> list[str]:
    """The names that name another object than ``before`` says. An mpi4py module may have
    been imported meanwhile (the real one, from its file: code outside the ranks, or a late
    module's names, asked for it)."""
    now = _originals()
    return [name for name, obj in before.items() if now[name] is not obj and not (
        obj is None and name.startswith("sys.modules") and type(now[name]) is types.ModuleType
        and getattr(now[name], "__file__", None))]


def _depths() -> tuple[int, int]:
    return depth("torch.distributed"), depth("mpi4py")


def _first_import(name: str):
    """Forget ``tests.late.<name>``, so that the next import is its first."""
    import tests.late as late
    sys.modules.pop(f"tests.late.{name}", None)
    if hasattr(late, name):
        delattr(late, name)


def _holding(started: threading.Event, release: threading.Event):
    """A rank program whose rank 0 waits, after a guarded torch call, until ``release``;
    then every rank imports mpi4py and calls it (the other launch may have ended by then)."""
    def prog(dist):
        tdist.init_process_group("gloo")
        t = torch.ones(1)
        tdist.all_reduce(t)
        if dist.global_rank == 0:
            started.set()
            assert release.wait(120)
        from mpi4py import MPI
        return t.item(), MPI.COMM_WORLD.allgather(dist.global_rank)
    return prog


@pytest.mark.parametrize("ends_first", ["first_started", "second_started"])
def test_two_launches_in_threads_ending_in_either_order_leave_nothing_patched(ends_first):
    # With a plain save-and-restore, the second launch saves the first one's stand-ins and,
    # ending last, puts them back; the first, ending first, takes the second's away from it.
    before = _originals()
    started = {k: threading.Event() for k in "ab"}
    release = {k: threading.Event() for k in "ab"}
    out: dict = {}

    def run(key):
        try:
            out[key] = trtsim.launch(_holding(started[key], release[key]), tp=2,
                                     intercept=BOTH, timeout=120)
        except BaseException as exc:  # noqa: BLE001 - the assertion below shows it
            out[key] = exc

    threads = {k: threading.Thread(target=run, args=(k,)) for k in "ab"}
    first, last = ("a", "b") if ends_first == "first_started" else ("b", "a")
    try:
        threads["a"].start()
        assert started["a"].wait(120)
        threads["b"].start()
        assert started["b"].wait(120)
        release[first].set()
        threads[first].join(120)
        assert not threads[first].is_alive() and first in out
        # the other launch still runs: its stand-ins are in place
        assert sys.modules["mpi4py"] is not before["sys.modules[mpi4py]"]
        assert tdist.all_reduce is not before["tdist.all_reduce"]
        assert _depths() == (1, 1)
    finally:
        for key in "ab":
            release[key].set()               # its ranks import mpi4py now
            threads[key].join(120)
    expected = [(2.0, [0, 1]), (2.0, [0, 1])]
    assert out == {"a": expected, "b": expected}
    assert _changed(before) == [] and _depths() == (0, 0)
    assert not tdist.is_initialized()


def test_outside_a_rank_the_stand_ins_are_the_real_functions_and_modules():
    """While a launch runs, a thread of no rank gets torch's and mpi4py's own answers."""
    started, release = threading.Event(), threading.Event()
    out: dict = {}
    launch = threading.Thread(target=lambda: out.update(r=trtsim.launch(
        _holding(started, release), tp=2, intercept=BOTH, timeout=120)))
    launch.start()
    try:
        assert started.wait(120)
        assert tdist.is_initialized() is False        # torch's own answer: not trtsim's
        if HAS_MPI4PY:
            from mpi4py import MPI
            assert MPI.COMM_WORLD.Get_size() == 1     # the real library: a singleton
            assert type(MPI.COMM_WORLD).__module__ == "mpi4py.MPI"
        else:
            with pytest.raises(ImportError):
                from mpi4py import MPI  # noqa: F401
    finally:
        release.set()
        launch.join(120)
    assert out["r"] == [(2.0, [0, 1]), (2.0, [0, 1])]     # the ranks kept the stand-ins


def _imports_late_modules(dist, apis=BOTH):
    """Rank program part: import the late modules of ``apis`` (their first import) and call
    them."""
    from tests.late import binds_mpi
    out = [binds_mpi.world_sum(1), binds_mpi.world_size()]
    if "torch" in apis:
        from tests.late import binds_torch
        tdist.init_process_group("gloo")
        out.append(binds_torch.reduce(torch.ones(1)).item())
    return out


def _assert_late_modules_hold_the_real_objects(apis=BOTH):
    from tests.late import binds_mpi
    if "torch" in apis:
        from tests.late import binds_torch
        assert binds_torch.all_reduce is tdist.all_reduce          # the real function itself
        assert binds_torch.is_initialized is tdist.is_initialized
        assert binds_torch.initialised() is False
    if HAS_MPI4PY:
        import mpi4py.MPI as real
        assert binds_mpi.MPI is real and type(real).__name__ == "module"
        assert binds_mpi.COMM_WORLD is real.COMM_WORLD and binds_mpi.SUM is real.SUM
        assert binds_mpi.world_size() == 1
    else:                                    # without mpi4py the module would not import
        assert not hasattr(binds_mpi, "MPI") and not hasattr(binds_mpi, "COMM_WORLD")


def _late_launch_ended(before: dict, apis=BOTH) -> None:
    """After a launch whose ranks imported the late modules: nothing patched, the late
    modules hold the real objects."""
    _assert_late_modules_hold_the_real_objects(apis)
    assert _changed(before) == [] and _depths() == (0, 0)
    assert type(tdist.distributed_c10d._world).__name__ == "_World"
    assert not tdist.is_initialized()


def _fresh_late_modules() -> dict:
    _first_import("binds_torch")
    _first_import("binds_mpi")
    return _originals()


def test_a_module_first_imported_in_a_launch_holds_the_real_objects_after_it():
    before = _fresh_late_modules()
    assert trtsim.launch(_imports_late_modules, tp=2, intercept=BOTH, timeout=120) == \
        [[2, 2, 2.0], [2, 2, 2.0]]
    _late_launch_ended(before)


@pytest.mark.parametrize("apis", [BOTH, ("mpi",)], ids=["torch+mpi", "mpi"])
def test_a_rank_that_raises_leaves_nothing_patched(apis):
    before = _fresh_late_modules()

    def prog(dist):
        _imports_late_modules(dist, apis)
        if dist.global_rank == 1:
            raise RuntimeError("stop")
        from mpi4py import MPI
        MPI.COMM_WORLD.Barrier()

    with pytest.raises(trtsim.RankFailed, match="RuntimeError: stop"):
        trtsim.launch(prog, tp=2, intercept=apis, timeout=120)
    _late_launch_ended(before, apis)


@pytest.mark.parametrize("apis", [BOTH, ("mpi",)], ids=["torch+mpi", "mpi"])
def test_a_real_ctrl_c_in_a_rank_ends_the_launch_and_leaves_nothing_patched(apis):
    """SIGINT sent to the process from inside a rank: Python raises KeyboardInterrupt in the
    main thread -- the launcher's, or (mpi alone: ranks are greenlets of the launching
    thread) the rank's own."""
    before = _fresh_late_modules()

    def prog(dist):
        _imports_late_modules(dist, apis)
        if dist.global_rank == 1:
            os.kill(os.getpid(), signal.SIGINT)
        from mpi4py import MPI
        MPI.COMM_WORLD.Barrier()

    assert threading.current_thread() is threading.main_thread()
    threads_before = set(threading.enumerate())
    with pytest.raises(KeyboardInterrupt):
        trtsim.launch(prog, tp=2, intercept=apis, timeout=120)
    _late_launch_ended(before, apis)
    # Every rank thread ends with the launch (a parked one woken, none left with an
    # exception it can never take: tests/test_thread_handoff.py).
    for thread in set(threading.enumerate()) - threads_before:
        if thread.name.startswith("trtsim-rank-"):
            thread.join(timeout=60)
            assert not thread.is_alive(), thread.name
