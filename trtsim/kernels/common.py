"""Small helpers shared by the kernel front ends: argument checks, dtype normalisation, and the
CPU argmax every twin uses (torch.argmax's order: NaN above everything, lowest index on ties)."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INT_DTYPES = (torch.int32, torch.int64)


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


def check_float(name: str, t: torch.Tensor) -> None:
    check(t.dtype in FLOAT_DTYPES,
          f"{name}: dtype {t.dtype} is not one of float32, float16, bfloat16")


def check_int(name: str, t: torch.Tensor) -> None:
    check(t.dtype in INT_DTYPES, f"{name}: dtype {t.dtype} is not int32 or int64")


def same_device(*named: tuple[str, torch.Tensor | None]) -> torch.device:
    """The device shared by all given tensors (None entries are skipped)."""
    first = None
    for n, t in named:
        if t is None:
            continue
        if first is None:
            first = t.device
        elif t.device != first:
            raise ValueError(f"{n} is on {t.device}, expected {first} like the other inputs")
    return first


def as_i32(t: torch.Tensor) -> torch.Tensor:
    """Contiguous int32 view/copy of an integer tensor."""
    return t.to(torch.int32).contiguous()


def as_i64(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.int64).contiguous()


def np_f32(t: torch.Tensor) -> np.ndarray:
    """Contiguous fp32 numpy view of a CPU float tensor. fp16/bf16 widen to fp32 exactly, so
    argmax and comparisons are the same as on the original values."""
    return t.detach().to(torch.float32).contiguous().numpy()


def np_i32(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.int32).contiguous().numpy()


def np_i64(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.int64).contiguous().numpy()


@njit(cache=True, nogil=True)
def argmax_f32(x):
    """Index of the maximum of a 1-D array: the first NaN if any, else the first maximum."""
    best = x[0]
    bi = 0
    if best != best:
        return 0
    for i in range(1, x.shape[0]):
        v = x[i]
        if v != v:
            return i
        if v > best:
            best = v
            bi = i
    return bi
