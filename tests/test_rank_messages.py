"""What a spawned rank tells its launcher travels as typed records: each survives the result
queue's pickling as itself, is read by ``match`` on its fields, and a record that names no
rank is refused where it is made."""

import pickle

import pytest

from trtsim.backends.process.rank_messages import (GroupAnnounced, RankFinished, RankRaised,
                                                   RankReported)

MESSAGES = [RankFinished(2, pickle.dumps({"ok": 1}), {"k": 1}, [], [], ["note"]),
            RankRaised(1, "RuntimeError: boom", "Traceback ...", peer_loss=True),
            RankReported(0, pickle.dumps(ValueError("x"))),
            GroupAnnounced(3, "ab12", [0, 3])]


def read(msg) -> tuple:
    match msg:
        case RankFinished(rank, result, census, _, _, notes):
            return ("finished", rank, pickle.loads(result), census, notes)
        case RankRaised(rank, message, _, peer_loss):
            return ("raised", rank, message, peer_loss)
        case RankReported(rank, report):
            return ("reported", rank, type(pickle.loads(report)).__name__)
        case GroupAnnounced(rank, digest, ranks):
            return ("group", rank, digest, ranks)
    return ("unknown",)


def test_each_message_crosses_the_queue_as_itself_and_reads_by_its_fields():
    got = [read(pickle.loads(pickle.dumps(m))) for m in MESSAGES]
    assert got == [("finished", 2, {"ok": 1}, {"k": 1}, ["note"]),
                   ("raised", 1, "RuntimeError: boom", True),
                   ("reported", 0, "ValueError"),
                   ("group", 3, "ab12", (0, 3))]
    assert read(("ok", 2, b"")) == ("unknown",)          # a positional tuple is no message


@pytest.mark.parametrize("rank", [-1, "0", None, True])
def test_a_message_names_a_rank(rank):
    with pytest.raises(ValueError, match="is not a rank number"):
        RankRaised(rank, "x", "")
