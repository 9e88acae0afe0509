"""Interception is a scoped, counted install: launches in several threads share it and the
last one out restores torch.distributed; a stand-in bound by name inside a launch is the real
function outside any rank; raising or Ctrl-C in a rank leaves nothing patched."""

import sys
import threading

import pytest
import torch
import torch.distributed as tdist

import trtsim
from trtsim.comm.scoped_install import depth

REAL = {name: getattr(tdist, name) for name in ("all_reduce", "init_process_group", "new_group")}


def _patched() -> list[str]:
    return [n for n, f in REAL.items() if getattr(tdist, n) is not f]


def _sum(dist):
    tdist.init_process_group("gloo")
    t = torch.ones(1)
    tdist.all_reduce(t)
    return t.item()


def test_two_launches_in_threads_ending_out_of_order_leave_nothing_patched():
    # a starts first and ends first, while b (started second) still runs: with a plain
    # save-and-restore, b would restore what it saved at its start -- a's stand-ins
    a_running, b_running, a_done = threading.Event(), threading.Event(), threading.Event()
    out = {}

    def holding(running: threading.Event, until: threading.Event):
        def prog(dist):
            value = _sum(dist)
            if dist.global_rank == 0:
                running.set()
                assert until.wait(60)
            return value
        return prog

    first, second = holding(a_running, b_running), holding(b_running, a_done)

    def run(name, prog):
        out[name] = trtsim.launch(prog, tp=2, intercept=("torch",), timeout=90)

    a = threading.Thread(target=run, args=("a", first))
    a.start()
    assert a_running.wait(60)
    b = threading.Thread(target=run, args=("b", second))
    b.start()
    a.join(90)
    assert "a" in out and depth("torch.distributed") == 1 and _patched()   # b still runs
    a_done.set()
    b.join(90)
    assert out == {"a": [2.0, 2.0], "b": [2.0, 2.0]}
    assert _patched() == [] and depth("torch.distributed") == 0
    assert not tdist.is_initialized()


def test_a_module_first_imported_in_a_launch_holds_the_real_functions_after_it():
    sys.modules.pop("tests.late.binds_torch", None)

    def prog(dist):
        from tests.late import binds_torch
        tdist.init_process_group("gloo")
        return binds_torch.reduce(torch.ones(1)).item()

    assert trtsim.launch(prog, tp=2, intercept=("torch",), timeout=60) == [2.0, 2.0]
    from tests.late import binds_torch
    assert binds_torch.initialised() is False            # torch's own answer, not trtsim's
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        binds_torch.reduce(torch.ones(1))


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_rank_that_raises_or_is_interrupted_leaves_nothing_patched(error):
    def prog(dist):
        tdist.init_process_group("gloo")
        if dist.global_rank == 1:
            raise error("stop")
        tdist.barrier()

    expected = trtsim.RankFailed if error is RuntimeError else KeyboardInterrupt
    with pytest.raises(expected):
        trtsim.launch(prog, tp=2, intercept=("torch",), timeout=60)
    assert _patched() == [] and depth("torch.distributed") == 0
    assert type(tdist.distributed_c10d._world).__name__ == "_World"
