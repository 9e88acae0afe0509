"""The frameworks' extracted files, once per test session (the hook installed for them)."""

from pathlib import Path

import pytest

from tests.realcode import frameworks


@pytest.fixture(scope="session")
def framework_roots() -> dict[str, Path]:
    """Package name -> extraction root of vLLM and SGLang, importable through the hook."""
    return {pin.package: frameworks.require(pin) for pin in (frameworks.VLLM, frameworks.SGLANG)}
