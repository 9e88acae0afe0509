"""Matching rules of the collective-symmetry guard (pure functions over call records).

How the guard sees a skip
-------------------------
Every member of a group numbers its calls on that group (``seq``). A communicator pairs the
n-th call of each member, whatever the calls are for. When one member skips a call, its *next*
call on the group takes the skipped call's place: same op, same sequence, often the same shape
What differs is the purpose: the record of the skipping rank carries a later executor
iteration, or another label, or (when the call is unlabelled) another purpose key, the chain
of functions that made the call (``comm.origin``). So the rule is: at each group sequence
every member's record must agree on op, signature, root, reduce op, label and iteration, and
on the purpose key when no label names the purpose. The first two records that disagree are
reported; nothing waits for the rest.
"""

from __future__ import annotations

from ..calls.errors import CollectiveMismatch, rank_name
from ..calls.ops import Op
from ..calls.purpose_paths import SEP, purpose_of
from ..calls.records import CallRecord

# Fields compared at one group sequence, in the order a report names them; when no label
# names the purpose, the purpose key of the call stack is compared too (``purpose``).
MATCH_FIELDS = ("op", "root", "reduce_op", "signature", "label", "iteration")


def purpose(rec: CallRecord) -> str | None:
    """What an unlabelled call is for, beyond its mechanics (the function chain that made it,
    ``comm.origin``); None when a label says it."""
    return rec.purpose if rec.label is None else None


def match_key(rec: CallRecord) -> tuple:
    """What members of a group must agree on at one sequence. Two records match exactly when
    their keys are equal (``differences`` is empty); the process backend hashes this key."""
    return tuple(getattr(rec, f) for f in MATCH_FIELDS) + (purpose(rec),)


def differences(a: CallRecord, b: CallRecord) -> tuple[str, ...]:
    """The fields in which two records of one group sequence disagree (``match_key``'s
    components, named; early-outs on the hot path where records agree)."""
    diff = [f for f in MATCH_FIELDS if getattr(a, f) != getattr(b, f)]
    if "label" not in diff and purpose(a) != purpose(b):
        diff.append("purpose")
    return tuple(diff)


def can_pair(a: CallRecord, b: CallRecord) -> bool:
    """Whether a real communicator could execute the two calls together (guard off): the
    mechanics agree, whatever the purpose."""
    return a.op == b.op and a.root == b.root and a.reduce_op == b.reduce_op and (
        a.signature == b.signature or "tensor" not in a.signature + b.signature)


def awaits_every_member(rec: CallRecord) -> bool:
    """Whether a member must see every member's post of ``rec`` before it enters the real
    call (the process backend's entry rule). Rooted ops must (``Op.rooted``): their root, or
    their senders, can finish before the others enter, and a late member would then pair
    with a call nobody compared it with. The others must too wherever communicators share a
    transport: a real call entered early could pair with another communicator's call of a
    peer that is elsewhere. So every collective of two or more members waits; p2p calls pair
    by channel (``check_message``)."""
    return not Op(rec.op).p2p and len(rec.group_ranks) > 1


def check_message(sent: CallRecord, received: CallRecord) -> CollectiveMismatch | None:
    """The mismatch of a p2p message and the receive it pairs with, or None: a tensor
    receive's buffer must have the sent tensor's dtype and shape (``Payload.MESSAGE``), or a
    real transport reads or writes the wrong number of bytes (gloo fills part of a larger
    buffer and says nothing). Object messages may be anything."""
    if sent.signature == received.signature:
        return None
    return CollectiveMismatch(
        f"p2p {sent.op} -> {received.op}: the payloads differ ({sent.signature} sent, "
        f"{received.signature} expected)", group_kind="p2p", group_ranks=received.group_ranks,
        ranks=(sent.rank, received.rank), calls={sent.rank: sent, received.rank: received},
        explanation="the receive buffer does not fit the sent tensor")


def message_taken(sent: CallRecord, receiver_call: CallRecord | None) -> bool:
    """Whether message ``sent`` (the ``sent.seq``-th on its channel) has been taken, judged
    from the receiver's latest p2p call: a receive on the same channel with a later
    sequence (receives on one channel complete in order). What a sender whose transport
    cannot say when a send completed (gloo's ``isend`` is complete only once waited for)
    uses to drop the send from its pending list: a stale pending send would make the
    receiver's later receive look satisfiable and hide a deadlock."""
    if receiver_call is None or not receiver_call.is_p2p or Op.of(receiver_call.op).sends:
        return False
    return (receiver_call.peer == sent.rank and receiver_call.tag == sent.tag
            and receiver_call.seq > sent.seq)


def output_list_error(api: str, what: str, got: int, expected: int) -> str | None:
    """Why an output (or input) list of an intercepted call has the wrong length, or None.
    Every backend asks this before the call: gloo's own check raises, where a backend that
    computes the result itself would silently fill a prefix (``Payload.EACH_LIST``)."""
    if got == expected:
        return None
    return (f"{api}: {what} has {got} entries for a group of {expected} ranks (one per "
            f"member expected)")


def check_group_call(records: dict[int, CallRecord]) -> CollectiveMismatch | None:
    """The mismatch among the records members posted at one group sequence, or None.

    ``records`` maps global rank -> record; members that have not arrived are absent.
    The reference is the lowest rank's record, so reports are stable across schedules.
    """
    if len(records) < 2:
        return None
    ranks = sorted(records)
    ref = records[ranks[0]]
    for rank in ranks[1:]:
        diff = differences(ref, records[rank])
        if diff:
            return mismatch_error(ref, records[rank], diff, records)
    return None


def mismatch_error(a: CallRecord, b: CallRecord, diff: tuple[str, ...],
                   records: dict[int, CallRecord]) -> CollectiveMismatch:
    """Build the report for two disagreeing records of one group sequence."""
    field = diff[0] if "iteration" not in diff else "iteration"
    summary = (f"{a.group_kind} group {list(a.group_ranks)}: call #{a.seq} differs in "
               f"{', '.join(diff)} ({rank_name(a)}: {_show(a, field, b)}, "
               f"{rank_name(b)}: {_show(b, field, a)})")
    divergent = tuple(sorted(r for r, rec in records.items() if differences(a, rec))) or (b.rank,)
    return CollectiveMismatch(
        summary, group_kind=a.group_kind, group_ranks=a.group_ranks,
        ranks=tuple(sorted({a.rank, *divergent})), calls=dict(records),
        explanation=explain_mismatch(a, b, diff))


def _show(rec: CallRecord, field: str, other: CallRecord) -> str:
    if field == "purpose":
        return purpose_text(rec, other)
    value = getattr(rec, field, None)
    return repr(value) if isinstance(value, str) else str(value)


def purpose_text(rec: CallRecord, other: CallRecord) -> str:
    """``rec``'s purpose key up to where it parts from ``other``'s: the functions that tell
    the two calls apart, innermost first."""
    mine, theirs = rec.purpose.split(SEP), other.purpose.split(SEP)
    i = next((i for i, (x, y) in enumerate(zip(mine, theirs)) if x != y), min(len(mine), len(theirs)))
    return purpose_of(mine[:i + 1]) or "?"


def explain_mismatch(a: CallRecord, b: CallRecord, diff: tuple[str, ...]) -> str:
    """One line saying what most likely happened."""
    name_a, name_b = rank_name(a), rank_name(b)
    call = a.call_name
    if "iteration" in diff:
        ahead, behind = (b, a) if b.iteration > a.iteration else (a, b)
        return (f"{rank_name(ahead)} reached {call} #{a.seq} in iteration {ahead.iteration} "
                f"while {rank_name(behind)} is still in iteration {behind.iteration}: "
                f"{rank_name(ahead)} skipped a call (or {rank_name(behind)} made an extra one)")
    if "op" in diff:
        return (f"{name_a} called {a.op} while {name_b} called {b.op} at the same position: "
                "the members run different code paths")
    if "label" in diff:
        return (f"{name_a} entered {a.label!r} while {name_b} entered {b.label!r} at the same "
                "position: the calls are out of order, or one rank skipped one")
    if "root" in diff:
        return f"the members disagree on the root ({name_a}: {a.root}, {name_b}: {b.root})"
    if "reduce_op" in diff:
        return (f"the members disagree on the reduce op ({name_a}: {a.reduce_op}, "
                f"{name_b}: {b.reduce_op})")
    if "signature" in diff:
        return (f"the payloads differ ({name_a}: {a.signature}, {name_b}: {b.signature}): "
                "a real communicator would read or write the wrong number of bytes")
    return (f"{name_a} entered {call} #{a.seq} from {purpose_text(a, b)} while {name_b} entered "
            f"it from {purpose_text(b, a)}: the members run different code paths, or one skipped "
            "a call (if both serve one purpose, give them a label= or declare the function a "
            "wrapper)")
