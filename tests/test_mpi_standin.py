"""The stand-in mpi4py runs TensorRT-LLM's communicator shapes (tests/mpi_programs.py) on the
inproc and the gloo backend: the legal programs give, rank for rank, what real Open MPI gave
(tests/data/mpi_program_results.json) and are never reported; the buggy ones are reported."""

import json
import os

import numpy as np
import pytest

import trtsim
from tests import mpi_bugs as B
from tests import mpi_programs as P
from tests.mpi_protocols import chunked_broadcast

pytestmark = pytest.mark.timeout(300)
BACKENDS = ["inproc", "gloo"]
RECORDED = os.path.join(os.path.dirname(__file__), "data", "mpi_program_results.json")


def launch(prog, backend, **kw):
    return trtsim.launch(prog, tp=2, pp=2, backend=backend, intercept=("mpi",), timeout=90,
                         **kw)


def as_json(value):
    return json.loads(json.dumps(value))


@pytest.fixture(scope="module")
def recorded():
    with open(RECORDED) as f:
        return json.load(f)["results"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", P.LEGAL)
def test_legal_programs_give_real_mpis_results(name, backend, recorded):
    results = launch(getattr(P, name), backend)
    assert results.divergence == []
    assert as_json(list(results)) == recorded[name]


def test_the_recorded_results_say_what_the_protocols_promise(recorded):
    """The reference itself is right: the chunked broadcast delivers the root's object to
    every rank, the gather with displacements every rank's object to the root only."""
    bcast = recorded["broadcast_protocol"]
    assert [b[:2] for b in bcast] == [[49, 100]] * 4
    assert [b[2] for b in bcast] == ["tp-root-0", "tp-root-0", "tp-root-2", "tp-root-2"]
    one_shot, rounds, _ = recorded["gather_protocol"][0]
    assert one_shot == [{"rank": r, "pad": [r] * (r * 7)} for r in range(4)]
    assert rounds == ["y" * (r * 13) for r in range(4)]
    assert all(g[0] is None for g in recorded["gather_protocol"][1:])
    assert recorded["gather_protocol"][2][2] == [[0, None], [2, None]]      # PP root: pp rank 1
    assert recorded["probe_keeps_the_message"][1][3:] == [True, "first", "second"]


BUGGY = {   # program: (report, phrase)
    "skip_header_bcast": (trtsim.CollectiveMismatch, "differs in op"),
    "count_mismatch": (trtsim.CollectiveMismatch,
                       "differs in signature (rank 0: 'tensor[int64, (3,)]'"),
    "cross_comm_deadlock": (trtsim.CollectiveDeadlock, "cross-group wait cycle"),
    "gatherv_truncation": (trtsim.RankFailed, "MPI_ERR_TRUNCATE: message truncated"),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(BUGGY))
def test_buggy_programs_are_reported(name, backend):
    kind, phrase = BUGGY[name]
    with pytest.raises(trtsim.CollectiveError) as info:
        launch(getattr(B, name), backend)
    assert type(info.value) is kind and phrase in str(info.value), str(info.value)
    assert "mpi_bugs.py" in str(info.value)


def test_the_cross_api_deadlock_names_both_communicators():
    with pytest.raises(trtsim.CollectiveDeadlock) as info:
        launch(B.cross_comm_deadlock, "inproc")
    calls = info.value.calls
    assert {rec.api for rec in calls.values()} == {"MPI.allgather", "MPI.Barrier"}
    assert {rec.group_kind for rec in calls.values()} == {"tp", "world"}


def test_a_skipped_chunk_of_the_broadcast_protocol_is_reported_at_the_chunk():
    def skip_a_chunk():
        from mpi4py import MPI
        world = MPI.COMM_WORLD
        blob = b"z" * 200
        chunked_broadcast(world, blob if world.Get_rank() == 0 else None)
        header = np.zeros(3, dtype=np.int64)
        world.Bcast([header, MPI.INT64_T], root=0)
        if world.Get_rank() != 3:                          # rank 3 skips the chunk
            world.Bcast([memoryview(bytearray(8)), MPI.BYTE], root=0)
        world.Barrier()
    with pytest.raises(trtsim.CollectiveMismatch) as info:
        launch(skip_a_chunk, "inproc")
    assert "rank 3" in str(info.value) and "differs in op" in str(info.value)


def test_status_counts_in_elements_of_a_type():
    from trtsim.intercept.mpi.datatypes import DATATYPES
    from trtsim.intercept.mpi.requests import UNDEFINED, Status
    st = Status()
    assert (st.source, st.tag, st.error, st.Get_count()) == (-1, -1, 0, 0)
    st.fill(2, 5, 20)
    assert st.Get_count(DATATYPES["INT"]) == 5 and st.Get_elements(DATATYPES["BYTE"]) == 20
    assert st.Get_count(DATATYPES["INT64_T"]) == UNDEFINED and st.count == 20
    assert Status(st).Get_source() == 2


def test_unsupported_forms_say_what_they_are():
    def in_place_alltoall():
        from mpi4py import MPI
        MPI.COMM_WORLD.Alltoall(MPI.IN_PLACE, np.zeros(4))

    def logical_and():
        from mpi4py import MPI
        MPI.COMM_WORLD.allreduce(True, op=MPI.LAND)

    def any_source_probe():
        from mpi4py import MPI
        MPI.COMM_WORLD.Probe(source=MPI.ANY_SOURCE)

    for prog, phrase in [(in_place_alltoall, "Alltoall with MPI.IN_PLACE"),
                         (logical_and, "allreduce with MPI.LAND"),
                         (any_source_probe, "Probe with source/dest -1")]:
        with pytest.raises(trtsim.RankFailed, match="NotImplementedError") as info:
            launch(prog, "inproc")
        assert phrase in str(info.value)


def test_integer_like_ranks_and_tags_are_taken_as_mpi4py_takes_them():
    """mpi4py takes anything with ``__index__`` (``np.int64(1)``) as a root, peer or tag, and
    refuses what has none with TypeError."""
    def prog():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        got = comm.bcast(f"from {comm.Get_rank()}", root=np.int64(1))
        if comm.Get_rank() == 0:
            comm.send("p2p", dest=np.int64(1), tag=np.int32(4))
            return [got]
        status = MPI.Status()
        value = comm.recv(source=np.int64(0), tag=np.int64(4), status=status)
        return [got, value, type(status.Get_source()).__name__, status.Get_tag()]

    def text_root():
        from mpi4py import MPI
        MPI.COMM_WORLD.bcast("x", root="0")
    results = trtsim.launch(prog, tp=2, intercept=("mpi",), timeout=90)
    assert list(results) == [["from 1"], ["from 1", "p2p", "int", 4]]
    with pytest.raises(trtsim.RankFailed, match="TypeError: MPI bcast: rank '0' is not an "
                                                "integer"):
        trtsim.launch(text_root, tp=2, intercept=("mpi",), timeout=90)


def test_waitall_waits_on_every_request_and_extends_a_short_statuses_list():
    """As mpi4py: a statuses list shorter than the requests gets a new Status for each
    request past its end, and every request is waited on."""
    def prog():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 0:
            for tag in (1, 2, 3, 4):
                comm.send(f"m{tag}", dest=1, tag=tag)
            return None
        statuses = []
        values = MPI.Request.waitall([comm.irecv(source=0, tag=1),
                                      comm.irecv(source=0, tag=2)], statuses)
        short = [MPI.Status()]
        requests = [comm.irecv(source=0, tag=3), comm.irecv(source=0, tag=4)]
        MPI.Request.Waitall(requests, short)
        return [values, [(s.Get_source(), s.Get_tag()) for s in statuses + short],
                [r.test() for r in requests]]
    results = trtsim.launch(prog, tp=2, intercept=("mpi",), timeout=90)
    assert as_json(results[1]) == [["m1", "m2"], [[0, 1], [0, 2], [0, 3], [0, 4]],
                                   [[True, None], [True, None]]]
