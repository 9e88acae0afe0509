"""vLLM and SGLang as these tests load them: the pinned releases, their files from the wheel
cache (``wheels``), imported through the stub hook (``stubs``).

``require(pin)`` is what a test module or a rank-program module calls before it imports the
framework: it extracts the files once per machine and installs the hook in this process (a
gloo rank process runs it again when it imports the program's module: the cache is there by
then). When the registry cannot be reached the tests fail where ``CI`` is set and are skipped
with the reason elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import manifest, stubs, wheels

VLLM = wheels.Pin("vllm", "0.33.0", manifest.VLLM)
SGLANG = wheels.Pin("sglang", "0.5.23", manifest.SGLANG)
# SGLang's configuration and runtime context are msgspec Structs throughout (its server args,
# its parallel widths): the real library, from its wheel like the frameworks, not a stub.
MSGSPEC = wheels.Pin("msgspec", "0.23.0")
DEPENDENCIES = {"vllm": (), "sglang": (MSGSPEC,)}

# The frameworks' own switches (not stubs), set before their modules import: vLLM's CPU
# platform (its GroupCoordinators get the CpuCommunicator over torch.distributed, as a CPU
# deployment does), SGLang's CPU engine, and SGLang's TP broadcast over torch.distributed
# rather than its shared-memory message queue (which no guard sees, and which blocks in C,
# where no inproc rank can be switched out).
PLATFORM_ENV = {"VLLM_TARGET_DEVICE": "cpu", "SGLANG_USE_CPU_ENGINE": "1",
                "SGLANG_USE_MESSAGE_QUEUE_BROADCASTER": "0"}


def require(pin: wheels.Pin) -> Path:
    """The framework's extraction root, with the hook installed for it (and its
    dependencies) in this process."""
    roots = {}
    for needed in (pin, *DEPENDENCIES[pin.package]):
        try:
            roots[needed.package] = wheels.extract(needed)
        except wheels.RegistryUnreachable as exc:
            import pytest                  # here only: rank processes need not import it
            reason = f"{needed.requirement} from the package registry: {exc}"
            if os.environ.get("CI"):
                pytest.fail(f"CI needs {reason}", pytrace=False)
            pytest.skip(f"cannot fetch {reason}", allow_module_level=True)
    os.environ.update(PLATFORM_ENV)
    stubs.install(roots)
    return roots[pin.package]
