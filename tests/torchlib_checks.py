"""What the tests of PyTorch's libraries under the guard assert of a launch and a report."""

import pytest
import torch

import trtsim

WORLD = 4
PROGRAMS_FILE = "torchlib_programs.py"


def launch(prog, backend: str, *args, **kw):
    """``prog(*args)`` on 4 ranks with torch.distributed intercepted."""
    return trtsim.launch(prog, tp=WORLD, backend=backend, intercept=("torch",), args=args,
                         timeout=60, **kw)


def report_of(prog, backend: str, *args) -> trtsim.CollectiveError:
    """The report a buggy program gives: a mismatch or a deadlock, never a rank's failure,
    a timeout or a silent finish."""
    try:
        launch(prog, backend, *args)
    except (trtsim.CollectiveMismatch, trtsim.CollectiveDeadlock) as err:
        return err
    raise AssertionError(f"{prog.__name__}{args} on {backend} finished without a report")


def names_rank_and_line(err: trtsim.CollectiveError, rank: int) -> None:
    """The report names the rank that diverged and the user's lines (never torch's)."""
    text = str(err)
    assert f"rank {rank}" in text, text
    assert err.calls, text
    for rec in err.calls.values():
        assert rec.callsite.startswith("tests/" + PROGRAMS_FILE), text
    assert list(err.group_ranks) == sorted(err.group_ranks), text


def reported_alike(prog, backend: str, rank: int, *args) -> trtsim.CollectiveError:
    """The report of a buggy ``prog(*args)`` on ``backend``, naming ``rank`` and the user's
    lines; on a process backend also inproc's kind of report, the ranks both name standing
    at the same calls, numbered alike. (A process backend's monitor declares at the first
    polls where the blocked set cannot progress, so a rank still on its way into its next
    call is named or not by timing; inproc reports once every other rank has run on.)"""
    err = report_of(prog, backend, *args)
    names_rank_and_line(err, rank)
    if backend == "inproc":
        return err
    base = report_of(prog, "inproc", *args)
    assert type(err) is type(base), (str(base), str(err))
    common = err.calls.keys() & base.calls.keys()
    assert common, (str(base), str(err))
    assert {r: _call(err.calls[r]) for r in common} == {r: _call(base.calls[r]) for r in common}
    return err


def _call(rec) -> tuple:
    return rec.api, rec.op, rec.seq, rec.callsite


BACKENDS = ["inproc", pytest.param("gloo", marks=pytest.mark.slow)]


def same(a, b, atol: float = 1e-5) -> bool:
    """Nested dicts/lists of tensors equal to ``atol``."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], atol) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, atol) for x, y in zip(a, b))
    return torch.allclose(torch.as_tensor(a), torch.as_tensor(b), atol=atol)
