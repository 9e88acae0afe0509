"""Compile the CUDA sources of the top-level ``kernels/`` folder with CuPy (NVRTC) and launch
them on torch's current stream.

CuPy is imported only here, and only when a CUDA tensor reaches a kernel. Modules are compiled
once per (source file, GPU architecture, name expressions, defines) and cached; CuPy also keeps
the compiled binaries on disk, so a new process pays NVRTC once per source text.

Tensors are handed to kernels as raw device pointers (``tensor.data_ptr()``): no copy, no
conversion, the same memory torch owns. Launches go to ``torch.cuda.current_stream(device)``,
so they order with torch's own work and are captured by ``torch.cuda.graph``.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from pathlib import Path

import numpy as np
import torch

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)
_PRAGMA_ONCE = re.compile(r'^\s*#\s*pragma\s+once\s*$', re.MULTILINE)

# The dtype names used by the templated kernels (common.cuh).
CUDA_TYPE = {torch.float32: "float", torch.float16: "f16_t", torch.bfloat16: "bf16_t"}


def kernels_dir() -> Path:
    """The folder of the ``.cu`` sources: ``$TRTSIM_KERNELS_DIR``, the checkout's
    ``kernels/`` (editable installs), or the copy a wheel ships inside the package
    (``trtsim/_shipped/kernels``, setup.py; ``trtsim.scenario.shipped`` finds the other
    shipped folders the same way)."""
    env = os.environ.get("TRTSIM_KERNELS_DIR")
    if env:
        return Path(env)
    package = Path(__file__).resolve().parents[1]
    checkout = package.parent / "kernels"
    return checkout if checkout.is_dir() else package / "_shipped" / "kernels"


def import_cupy():
    """CuPy, or an ImportError that says how to install it."""
    try:
        import cupy
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise ImportError(
            "trtsim.kernels needs CuPy for CUDA tensors: pip install trtsim[gpu] "
            "(CPU tensors run the numba twins and need no CuPy)") from exc
    return cupy


@functools.lru_cache(maxsize=None)
def source(name: str) -> str:
    """The text of ``kernels/<name>`` with its ``#include "..."`` lines inlined (once each)."""
    root = kernels_dir()
    seen: set[str] = set()

    def expand(fname: str) -> str:
        if fname in seen:
            return ""
        seen.add(fname)
        text = _PRAGMA_ONCE.sub("", (root / fname).read_text())
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(name)


def arch_of(device: torch.device) -> int:
    """Compute capability of ``device`` as an integer (90 for sm_90)."""
    return _arch(device_index(device))


def compile_options(arch: int) -> tuple[str, ...]:
    """NVRTC options for compute capability ``arch`` (e.g. 90). CuPy appends its own target
    and ``-ftz=true``; the kernels keep IEEE subnormals where it matters by writing that
    arithmetic in PTX and comparing values through integer keys (common.cuh)."""
    clusters = 1 if arch >= 90 else 0  # thread-block clusters and DSMEM exist from sm_90
    return (f"-arch=sm_{arch}", "--std=c++17", "--fmad=false", f"-DTRTSIM_HAS_CLUSTERS={clusters}")


@functools.lru_cache(maxsize=None)
def _module(name: str, arch: int, name_expressions: tuple[str, ...], device_index: int,
            defines: tuple[str, ...] = ()):
    cupy = import_cupy()
    with cupy.cuda.Device(device_index):
        module = cupy.RawModule(code=source(name), options=compile_options(arch) + defines,
                                name_expressions=name_expressions)
        module.compile()
    return module


def get_kernel(name: str, expr: str, device: torch.device, group: tuple[str, ...] = (),
               defines: tuple[str, ...] = ()):
    """The kernel ``expr`` (a name expression such as ``"foo<float>"``) of ``kernels/<name>``,
    compiled for ``device``. ``group`` lists name expressions compiled into the same module
    (those used together for one dtype); ``expr`` is added to it. ``defines`` ("-DNAME=VALUE")
    override a source's tuning macros."""
    exprs = tuple(dict.fromkeys((*group, expr)))
    index = device_index(device)
    return _function(name, _arch(index), exprs, index, expr, tuple(defines))


@functools.lru_cache(maxsize=None)
def _function(name: str, arch: int, exprs: tuple[str, ...], index: int, expr: str,
              defines: tuple[str, ...]):
    """(RawKernel, the device's cupy Function or None), looked up once."""
    cupy = import_cupy()
    raw = _module(name, arch, exprs, index, defines).get_function(expr)
    with cupy.cuda.Device(index):
        fn = getattr(raw, "kernel", None)
    return raw, fn


def device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


@functools.lru_cache(maxsize=None)
def _arch(index: int) -> int:
    major, minor = torch.cuda.get_device_capability(index)
    return 10 * major + minor


def _current_stream_ptr(index: int) -> int:
    """cudaStream_t of torch's current stream on device ``index``."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # what Triton's launcher uses
    return raw(index) if raw is not None else torch.cuda.current_stream(index).cuda_stream


@functools.lru_cache(maxsize=64)
def _external_stream(ptr: int, index: int):
    with warnings.catch_warnings():  # newer CuPy prefers Stream.from_external; same object
        warnings.simplefilter("ignore", DeprecationWarning)
        return import_cupy().cuda.ExternalStream(ptr, index)


def launch(kernel, grid, block, args, device: torch.device, shared_mem: int = 0) -> None:
    """Launch ``kernel`` (from get_kernel) on torch's current stream of ``device``.

    The fast path calls CuPy's Function directly with the stream (no context managers: this
    runs once per kernel call and its cost is host time on the critical path)."""
    raw, fn = kernel
    index = device_index(device)
    stream = _external_stream(_current_stream_ptr(index), index)
    grid, block, args = tuple(grid), tuple(block), tuple(args)
    if fn is not None and torch.cuda.current_device() == index:
        fn(grid, block, args, shared_mem, stream)
        return
    cupy = import_cupy()
    with cupy.cuda.Device(index), stream:
        raw(grid, block, args, shared_mem=shared_mem)


def ptr(t: torch.Tensor | None) -> np.uint64:
    """The device address of ``t`` as a kernel argument (0 for None)."""
    return np.uint64(0 if t is None else t.data_ptr())


@functools.lru_cache(maxsize=None)
def num_sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


# Copy words of the row-moving kernels: bytes -> CUDA type (uint4/uint2 are CUDA vector types).
WORD_TYPES = {16: "uint4", 8: "uint2", 4: "unsigned", 2: "u16w", 1: "unsigned char"}


def copy_word(row_bytes: int, *tensors: torch.Tensor) -> int:
    """The widest word (16, 8, 4, 2 or 1 bytes) that divides a row and every base address."""
    for w in (16, 8, 4, 2, 1):
        if row_bytes % w == 0 and all(t.data_ptr() % w == 0 for t in tensors):
            return w
    return 1
