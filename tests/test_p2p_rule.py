"""The p2p rule (``guard.rules.check_message``: a tensor receive's buffer must have the sent
tensor's dtype and shape) holds for the program's own torch.distributed messages on every
backend: inproc judges them in its mailbox, gloo where their two records meet
(``torch_ops.MessageRecords``), before any data moves. gloo itself would fill part of a larger
buffer and say nothing, and abort the receiving process on a smaller one."""

import pytest
import torch
import torch.distributed as tdist

import trtsim

pytestmark = pytest.mark.timeout(300)

BACKENDS = ["inproc", "gloo"]
FLOATS4 = ((4,), torch.float32)


def _message(dist, sent, buffer, how: str):
    """Rank 0 sends one tensor to rank 1: ``sent`` and rank 1's ``buffer`` are (shape,
    dtype); ``how``: "blocking" (send/recv), "receiver_first" (the receive is posted before
    the send starts), "sender_first" (the send is posted before the receive starts)."""
    tdist.init_process_group("gloo")
    me = dist.global_rank
    if how == "blocking":
        if me == 0:
            tdist.send(torch.ones(*sent[0], dtype=sent[1]), 1)
            return None
        buf = torch.zeros(*buffer[0], dtype=buffer[1])
        tdist.recv(buf, 0)
        return buf.tolist()
    first = (how == "receiver_first") == (me == 1)      # this rank posts before the barrier
    if me == 0:
        post = lambda: tdist.isend(torch.ones(*sent[0], dtype=sent[1]), 1)  # noqa: E731
    else:
        buf = torch.zeros(*buffer[0], dtype=buffer[1])
        post = lambda: tdist.irecv(buf, 0)                                  # noqa: E731
    work = post() if first else None
    tdist.barrier()
    work = work or post()
    work.wait()
    return buf.tolist() if me == 1 else None


CASES = {
    "larger_buffer": (FLOATS4, ((5,), torch.float32), "blocking"),
    "smaller_buffer": (((5,), torch.float32), FLOATS4, "blocking"),
    "other_dtype": (FLOATS4, ((4,), torch.int64), "blocking"),
    "receiver_first": (FLOATS4, ((5,), torch.float32), "receiver_first"),
    "sender_first": (((5,), torch.float32), FLOATS4, "sender_first"),
}


def _verdict(case: tuple, backend: str):
    try:
        res = trtsim.launch(_message, tp=2, backend=backend, intercept=("torch",), args=case,
                            timeout=60)
    except trtsim.CollectiveError as err:
        return err.kind, err.group_kind, err.group_ranks, err.ranks
    return "ok", list(res)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_receive_that_does_not_fit_is_a_mismatch(case, backend):
    assert _verdict(CASES[case], backend) == ("mismatch", "p2p", (0, 1), (0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["blocking", "receiver_first", "sender_first"])
def test_a_receive_that_fits_takes_the_message(how, backend):
    assert _verdict((FLOATS4, FLOATS4, how), backend) == ("ok", [None, [1.0] * 4])
