"""The same mpi4py programs (tests/mpi_programs.py) on real Open MPI under mpirun and on
trtsim's stand-in.

Legal programs give the same result on every rank: live real MPI equals the recorded results
(tests/data/mpi_program_results.json), which test_mpi_standin.py holds the stand-in to on
inproc and gloo, and equals the stand-in here directly. For the buggy ones this file records
what real MPI does (Open MPI 5.0.11, mpi4py 4.1.2, 4 ranks on one host) beside trtsim's report:

=====================  ==============================================  ======================
program                real MPI                                        trtsim (inproc, gloo)
=====================  ==============================================  ======================
skip_header_bcast      exit 0; rank 2's payload broadcast pairs with   CollectiveMismatch at
                       the others' header: it gets [7, 8, 9] as its    call #2 (op: broadcast
                       payload, silently                               vs barrier)
count_mismatch         MPI_ERR_TRUNCATE on the ranks that receive      CollectiveMismatch at
                       straight from the root; a rank below them in    call #1 (signature:
                       the broadcast tree waits forever: a hang        int64 x3 vs x2)
cross_comm_deadlock    a hang                                          CollectiveDeadlock
                                                                       naming the TP
                                                                       communicator and
                                                                       COMM_WORLD
gatherv_truncation     MPI_ERR_TRUNCATE at the root                    RankFailed: the root's
                                                                       MPI.Exception,
                                                                       MPI_ERR_TRUNCATE
=====================  ==============================================  ======================

A hang is bounded by HANG_S and counted as one.
"""

import json

import pytest

import trtsim
from tests import mpi_bugs as B
from tests import mpi_programs as P
from tests.mpirun_jobs import mpirun, needs_mpi
from tests.test_mpi_standin import BUGGY, RECORDED, as_json

pytestmark = [needs_mpi, pytest.mark.timeout(600)]
HANG_S = 25                    # a real job still running after this long is hung
# where the hang is the expected outcome: long past the few seconds the job takes to start
# and reach its hung call (the truncation message prints on the way), on a loaded machine
EXPECTED_HANG_S = 15


@pytest.fixture(scope="module")
def real_legal():
    job = mpirun(["tests/mpi_programs.py", "all"], timeout=240)
    assert job.returncode == 0, job.output[-3000:]
    return job.results()


def test_real_mpi_gives_the_recorded_results(real_legal):
    with open(RECORDED) as f:
        assert real_legal == json.load(f)["results"]


@pytest.mark.parametrize("name", P.LEGAL)
def test_the_stand_in_gives_real_mpis_results(name, real_legal):
    got = trtsim.launch(getattr(P, name), tp=2, pp=2, intercept=("mpi",), timeout=60)
    assert as_json(list(got)) == real_legal[name]


def real(name: str, bound: float = HANG_S):
    return mpirun(["tests/mpi_programs.py", name], timeout=bound)


def reported(name: str) -> trtsim.CollectiveError:
    kind, phrase = BUGGY[name]
    with pytest.raises(kind) as info:
        trtsim.launch(getattr(B, name), tp=2, pp=2, intercept=("mpi",), timeout=60)
    assert phrase in str(info.value)
    return info.value


def test_a_skipped_header_pairs_silently_on_real_mpi():
    job = real("skip_header_bcast")
    assert job.returncode == 0, job.output[-2000:]
    header, payload = job.results()["skip_header_bcast"][2]
    assert header == [0, 0, 0] and payload == [7, 8, 9]         # the header, as payload
    assert job.results()["skip_header_bcast"][1] == [[7, 8, 9], [1, 2, 3]]
    assert "call #2 differs in op" in str(reported("skip_header_bcast"))


def test_a_count_mismatch_truncates_and_hangs_on_real_mpi():
    job = real("count_mismatch", EXPECTED_HANG_S)
    assert "MPI_ERR_TRUNCATE: message truncated" in job.output, job.output[-2000:]
    assert job.timed_out or job.returncode != 0
    assert "call #1 differs in signature" in str(reported("count_mismatch"))


def test_a_cross_communicator_skip_hangs_on_real_mpi():
    job = real("cross_comm_deadlock", EXPECTED_HANG_S)
    assert job.timed_out and "RESULT" not in job.output, job.output[-2000:]
    err = reported("cross_comm_deadlock")
    assert {rec.group_kind for rec in err.calls.values()} == {"tp", "world"}


def test_a_short_gatherv_count_truncates_at_the_root_on_both():
    job = real("gatherv_truncation")
    assert job.returncode not in (0, None), job.output[-2000:]
    assert "MPI_ERR_TRUNCATE: message truncated" in job.output
    assert job.results()["gatherv_truncation"][1:] == [None, None, None]
    err = reported("gatherv_truncation")
    assert err.rank == 0 and "MPI Gatherv: 3 bytes arrived" in str(err)
