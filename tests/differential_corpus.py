"""Programs the backends once disagreed on: the differential tests' regression corpus.

Each entry names what inproc said, what gloo said before the fix, and the fix. Add a
program here (as data, ``differential_programs.Program``) whenever the generated search
finds a disagreement; an entry that cannot be fixed yet is marked ``xfail`` with why.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.differential_programs import Deviation, Program, Step


@dataclass(frozen=True)
class Entry:
    """A program, the verdict kind both backends must give, and its history."""

    name: str
    program: Program
    expect: str
    history: str
    xfail: str = ""         # why it still disagrees (a strict xfail), when it does


# A dropped isend handle, then a collective its receiver never enters while the receiver
# waits for a second message on the channel: the shape of the PP executor's deadlock.
_DROPPED = Step("p2p", "send_tensor", 0, "msg", (2,), pair=(0, 2), send="drop")
_WORLD = Step("world", "allgather", 1, "after")

CORPUS = (
    Entry("dropped_isend_then_second_receive",
          Program((_DROPPED, _WORLD), Deviation("extra", 2, 0)), "deadlock",
          "inproc: CollectiveDeadlock; gloo: CollectiveTimeout. gloo's isend is complete only "
          "once waited for, so rank 0 kept (2, 0) in its published pending sends and the "
          "monitor took rank 2's second receive for satisfiable. Fixed: a sender waiting in "
          "a collective drops the sends whose receiver posted a later receive "
          "(guard.rules.message_taken)."),
    Entry("tensor_into_larger_buffer",
          Program((Step("p2p", "send_tensor", 0, "msg", (4,), pair=(0, 1)),),
                  Deviation("wrong_shape", 1, 0)), "mismatch",
          "inproc: CollectiveMismatch (mailbox); gloo: ok, the 4 floats filled 4 of the "
          "receiver's 5. Fixed: tensor messages carry a header with the sender's record and "
          "the receiver applies guard.rules.check_message before taking the data."),
    Entry("isend_wait_into_smaller_buffer",
          Program((Step("p2p", "send_tensor", 0, "msg", (3, 2), "int64", pair=(3, 2),
                        send="wait"),), Deviation("wrong_dtype", 2, 0)), "mismatch",
          "the same rule for a dtype that differs, through isend + wait."),
    Entry("extra_unlabelled_rooted_gather",
          Program((Step("tp", "gather", 0, "s0", root=1), Step("tp", "barrier", 1),
                   Step("pp", "gather", 1, None, root=0),
                   Step("p2p", "send_tensor", 1, "s3", (3,), "int64", pair=(0, 1))),
                  Deviation("extra", 2, 2)), "mismatch",
          "found by the search: inproc CollectiveMismatch (purpose of an unlabelled rooted "
          "gather), gloo a CollectiveTimeout once, at a 30 s timeout on a loaded machine; a "
          "mismatch in 12 reruns. Kept: the purpose rule on a rooted op whose root may leave "
          "first, and the launch timeout the tests now use (60 s)."),
)

# The scenario of issue 23: the PP executor with on-arrival KV sends and the unguarded
# sticky skip. inproc reported the deadlock; gloo ran into the timeout ("NOT reproduced")
# for the reason of the first entry above.
EXECUTOR_DEADLOCK = ("executor_pp_on_arrival_unguarded",
                     {"topology": "tp1_pp2", "timeout": 8})
