"""The frameworks' extracted files, once per test session (the hook installed for them)."""

from pathlib import Path

import pytest

from tests.realcode import frameworks, hook


@pytest.fixture(scope="session")
def framework_roots() -> dict[str, Path]:
    """Package name -> extraction root of vLLM and SGLang, importable through the hook."""
    return {pin.package: frameworks.require(pin) for pin in (frameworks.VLLM, frameworks.SGLANG)}


@pytest.fixture(autouse=True)
def _absent_packages_stay_here():
    """The stand-ins of packages this machine lacks never outlive a realcode test: tests that
    run after it in the same worker see the machine as it is (``hook.AbsentFinder``)."""
    yield
    hook.forget_absent()
