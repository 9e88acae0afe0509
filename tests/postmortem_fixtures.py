"""The post-mortem tests' session fixtures (a plugin of tests/conftest.py): real dumps and
call logs, made once per session and shared by every xdist worker, only when a test asks."""

import pytest

from tests import postmortem_logs, postmortem_shapes


@pytest.fixture(scope="session")
def dumps(tmp_path_factory, request) -> str:
    """Flight Recorder dumps of the six shapes' hung gloo runs (``postmortem_shapes.RUNS``)."""
    return postmortem_shapes.suite_dumps(
        postmortem_shapes.shared_dir(tmp_path_factory, request, "fr_dumps"))


@pytest.fixture(scope="session")
def runs(tmp_path_factory, request) -> str:
    """Call logs of real gloo runs and their live reports (``postmortem_logs.RUNS``)."""
    return postmortem_logs.suite_logs(
        postmortem_shapes.shared_dir(tmp_path_factory, request, "call_logs"))
