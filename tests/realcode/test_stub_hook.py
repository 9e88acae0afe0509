"""The import hook: every stub says why, their files load from the extraction and nothing
else of theirs does, and a path that reaches a placeholder fails loudly."""

import importlib
import importlib.util

import pytest

from tests.realcode import hook, stubs


@pytest.fixture(autouse=True)
def hooked(framework_roots):
    return framework_roots


def test_every_stub_says_what_it_replaces_and_why():
    for name, stub in {**stubs.STUBS, **stubs.ABSENT}.items():
        assert len(stub.why) > 40, name
    config = importlib.import_module("vllm.config")
    assert config.__doc__.startswith("Stub of tests/realcode/stubs.py: vLLM's configuration")


def test_a_module_neither_extracted_nor_stubbed_is_not_found_by_name():
    with pytest.raises(ModuleNotFoundError, match="'vllm.entrypoints' .*tests/realcode"):
        importlib.import_module("vllm.entrypoints.llm")


def test_their_package_init_only_stub_keeps_their_submodules_real():
    sglang = importlib.import_module("sglang")
    state = importlib.import_module("sglang.srt.distributed.parallel_state")
    assert sglang.__doc__.startswith("Stub of tests/realcode/stubs.py: sglang/__init__.py")
    assert state.__file__.endswith("sglang/srt/distributed/parallel_state.py")
    assert not isinstance(state, hook.AbsentModule)


def real_triton_installed() -> bool:
    spec = importlib.util.find_spec("triton")
    return spec is not None and not isinstance(spec.loader, hook._StubLoader)


@pytest.mark.skipif(real_triton_installed(), reason="a real triton is installed: no stub")
def test_a_path_that_reaches_a_placeholder_raises():
    triton = importlib.import_module("triton")
    kernel = triton.jit(lambda x: x)
    with pytest.raises(hook.StubCalled, match="triton kernel"):
        kernel[(1,)](0)
    with pytest.raises(hook.StubCalled, match="triton.language.arange was called"):
        importlib.import_module("triton.language").arange(0, 4)


def test_code_outside_the_frameworks_never_sees_a_stand_in():
    # sglang imports orjson at module level (absent here: a stand-in serves it); mypy, run
    # later in the same worker, probes for orjson and must find none
    importlib.import_module("sglang.srt.distributed.parallel_state")
    probe = compile("import orjson", "/elsewhere/probe.py", "exec")
    with pytest.raises(ModuleNotFoundError, match="orjson"):
        exec(probe, {})
