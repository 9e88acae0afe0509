"""How one rank leaves a job (``backends.external.job_ending``), each rank a real process over
a real c10d store: the report printed once by rank 0, a job that judges its report
(``verdict``: ``trtsim run``) ending with the verdict's text and status instead, and a job
whose outcome is back (``settle``) left by every other rank at once, silently, with status
0, while rank 0 returns. The whole jobs under torchrun are in tests/test_one_report.py."""

import os
import subprocess
import sys
import textwrap

import pytest

from tests.mpirun_jobs import ROOT
from trtsim.backends.external.job_ending import JobVerdict

pytestmark = pytest.mark.timeout(300)

RANK = textwrap.dedent("""
    import sys
    import torch.distributed as dist
    from trtsim.backends.external.job_ending import JobEnding, JobVerdict
    from trtsim.backends.external.store_ledger import StoreLedger

    path, rank, size, how = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    verdict = (lambda report: JobVerdict(f"verdict on {report}", 0)) if how == "judged" else None
    ending = JobEnding(StoreLedger(dist.FileStore(path, -1), rank, size), rank, size,
                       stays=False, verdict=verdict)
    if how == "settle":
        ending.settle()
        print("RETURNED", rank, flush=True)
        sys.exit(0)
    ending.print_report("found by the monitor")
    ending.finish("the report")
    print("finish returned", flush=True)
""")


def rank(tmp_path, r: int, size: int, how: str):
    return subprocess.run([sys.executable, "-c", RANK, str(tmp_path / "store"), str(r),
                           str(size), how], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=ROOT))


def test_rank_0_prints_the_report_once_and_ends_the_job_with_status_1(tmp_path):
    out = rank(tmp_path, 0, 1, "report")
    assert (out.returncode, out.stdout, out.stderr) == (1, "", "found by the monitor\n")


def test_a_job_that_judges_its_report_ends_with_the_verdict_alone(tmp_path):
    out = rank(tmp_path, 0, 1, "judged")
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "verdict on the report\n")


def test_settle_leaves_every_other_rank_silently_and_returns_on_rank_0(tmp_path):
    others = [rank(tmp_path, r, 3, "settle") for r in (1, 2)]
    assert [(o.returncode, o.stdout, o.stderr) for o in others] == [(0, "", "")] * 2
    first = rank(tmp_path, 0, 3, "settle")          # both said they left: it returns at once
    assert (first.returncode, first.stdout, first.stderr) == (0, "RETURNED 0\n", "")


@pytest.mark.parametrize("status", [2, -1, 3])
def test_a_verdict_status_is_0_or_1(status):
    with pytest.raises(ValueError, match=rf"JobVerdict.status={status}: 0 \(as expected\) or 1"):
        JobVerdict("text", status)
