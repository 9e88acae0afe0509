"""Chain rejection sampling with vLLM's semantics (DESIGN 3.7): the emitted tokens are
distributed exactly as the target distribution q."""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

from . import cuda_loader as cl
from .common import argmax_f32, as_i32, check, check_float, np_f32, np_i32, same_device
from .sample_accept import cluster_size

MAX_WIDTH = 64  # max_spec_len + 1: the greedy path keeps one (key, index) pair per draft


def rejection_sample(draft_token_ids: torch.Tensor, num_draft_tokens: torch.Tensor,
                     draft_probs: torch.Tensor | None, target_probs: torch.Tensor,
                     bonus_token_ids: torch.Tensor, uniform_samples: torch.Tensor | None,
                     recovery_noise: torch.Tensor | None, *, greedy: bool = False,
                     max_spec_len: int | None = None) -> torch.Tensor:
    """Accept or reject each request's chain of drafts and emit the recovered or bonus token.

    Args:
      draft_token_ids: [T] int32/int64, the requests' drafts back to back.
      num_draft_tokens: [B] int, drafts of each request (sum = T).
      draft_probs: [T, V] float32/float16/bfloat16, or None for one-hot drafts (p(x_k) = 1).
      target_probs: [T, V], same dtype as draft_probs, the target distribution q per draft.
      bonus_token_ids: [B] int, emitted after a fully accepted chain.
      uniform_samples: [T] float64 (float32 widened) u_k in [0, 1); unused when greedy.
      recovery_noise: [B, V] float32 E ~ Exp(1) per request; unused when greedy.
      greedy: the greedy path (vLLM's all-greedy batch): target token = argmax q (torch order);
        accept while the draft equals it, emit it at the first difference.
      max_spec_len: max(num_draft_tokens) if known (saves a device sync on CUDA).

    Returns out [B, max_spec_len + 1] int32, -1 after the last emitted token. Random path:
    x_k is accepted when p(x_k) > 0 and u_k * p(x_k) <= q(x_k) (in float64); at the first
    rejection the emitted token is argmax_i max(q_i - p_i, 0) / E_i (one-hot drafts: q with
    q[x_k] set to 0) and the chain stops; a fully accepted chain is followed by the bonus.
    """
    check(draft_token_ids.dim() == 1, "draft_token_ids: expected [T]")
    check_float("target_probs", target_probs)
    check(target_probs.dim() == 2 and target_probs.shape[0] == draft_token_ids.numel(),
          f"target_probs: expected [{draft_token_ids.numel()}, V], got "
          f"{tuple(target_probs.shape)}")
    t, v = target_probs.shape
    check(v >= 1, "target_probs: empty vocabulary")
    bsz = num_draft_tokens.numel()
    check(bonus_token_ids.numel() == bsz, f"bonus_token_ids: expected {bsz} entries")
    if draft_probs is not None:
        check(draft_probs.shape == target_probs.shape and draft_probs.dtype == target_probs.dtype,
              "draft_probs: expected the shape and dtype of target_probs")
    if not greedy:
        check(uniform_samples is not None and uniform_samples.numel() == t,
              f"uniform_samples: expected [{t}]")
        check(recovery_noise is not None and tuple(recovery_noise.shape) == (bsz, v),
              f"recovery_noise: expected [{bsz}, {v}]")
    device = same_device(("draft_token_ids", draft_token_ids),
                         ("num_draft_tokens", num_draft_tokens), ("draft_probs", draft_probs),
                         ("target_probs", target_probs), ("bonus_token_ids", bonus_token_ids),
                         ("uniform_samples", uniform_samples), ("recovery_noise", recovery_noise))
    if max_spec_len is None:
        max_spec_len = int(num_draft_tokens.max()) if bsz else 0
    width = int(max_spec_len) + 1
    check(width <= MAX_WIDTH, f"max_spec_len: {width - 1} > {MAX_WIDTH - 1}")
    if device.type == "cpu":
        check(int(num_draft_tokens.sum()) == t, f"num_draft_tokens: sum != {t} drafts")
        check(bsz == 0 or int(num_draft_tokens.max()) < width,
              "max_spec_len: smaller than max(num_draft_tokens)")
        u = (uniform_samples.detach().to(torch.float64).contiguous().numpy() if not greedy
             else np.zeros(t, np.float64))
        e = np_f32(recovery_noise) if not greedy else np.ones((bsz, v), np.float32)
        out = _cpu(np_i32(draft_token_ids), np_i32(num_draft_tokens),
                   np_f32(draft_probs) if draft_probs is not None else np.zeros((0, v), np.float32),
                   draft_probs is not None, np_f32(target_probs), np_i32(bonus_token_ids), u, e,
                   width, greedy)
        return torch.from_numpy(out)
    return _cuda(as_i32(draft_token_ids), as_i32(num_draft_tokens),
                 draft_probs.contiguous() if draft_probs is not None else None,
                 target_probs.contiguous(), as_i32(bonus_token_ids),
                 None if greedy else uniform_samples.to(torch.float64).contiguous(),
                 None if greedy else recovery_noise.to(torch.float32).contiguous(), width, greedy)


@njit(cache=True, nogil=True, error_model="numpy")
def _cpu(draft, num_draft, draft_probs, has_p, target, bonus, uniform, noise, width, greedy):
    bsz = num_draft.shape[0]
    v = target.shape[1]
    out = np.full((bsz, width), -1, np.int32)
    off = 0
    for b in range(bsz):
        n = num_draft[b]
        if greedy:
            k = 0
            while k < n:
                t = argmax_f32(target[off + k])
                out[b, k] = t
                if t != draft[off + k]:
                    break
                k += 1
            if k == n:
                out[b, n] = bonus[b]
        else:
            rej = n
            for k in range(n):
                x = draft[off + k]
                p = draft_probs[off + k, x] if has_p else np.float32(1.0)
                q = target[off + k, x]
                if p > 0 and uniform[off + k] * np.float64(p) <= np.float64(q):
                    out[b, k] = x
                else:
                    rej = k
                    break
            if rej < n:
                row = off + rej
                x = draft[row]
                best = np.float32(0.0)
                bi = -1
                for i in range(v):
                    if has_p:
                        r = target[row, i] - draft_probs[row, i]
                        if not r > 0:
                            r = np.float32(0.0)
                    else:
                        r = np.float32(0.0) if i == x else target[row, i]
                    val = np.float32(r / noise[b, i])
                    if bi < 0 or val > best or (val != val and best == best):
                        best = val
                        bi = i
                out[b, rej] = bi
            else:
                out[b, n] = bonus[b]
        off += n
    return out


def _cuda(draft, num_draft, draft_probs, target, bonus, uniform, noise, width, greedy):
    device = target.device
    bsz, v = num_draft.numel(), target.shape[1]
    out = torch.empty((bsz, width), dtype=torch.int32, device=device)
    if bsz == 0:
        return out
    arch = cl.arch_of(device)
    cs = cluster_size(bsz, device, arch)
    ty = cl.CUDA_TYPE[target.dtype]
    names = [f"rejection_c{c}<{ty}>" for c in ((1, 2, 4, 8) if arch >= 90 else (1,))]
    kernel = cl.get_kernel("rejection.cu", f"rejection_c{cs}<{ty}>", device, tuple(names))
    elt = target.element_size()
    vec4 = (v % 4 == 0 and target.data_ptr() % (4 * elt) == 0
            and (draft_probs is None or draft_probs.data_ptr() % (4 * elt) == 0)
            and (noise is None or noise.data_ptr() % 16 == 0))
    args = (cl.ptr(draft), cl.ptr(num_draft), cl.ptr(draft_probs), cl.ptr(target), cl.ptr(bonus),
            cl.ptr(uniform), cl.ptr(noise), np.int32(v), np.int32(width), np.int32(int(greedy)),
            np.int32(int(vec4)), cl.ptr(out))
    cl.launch(kernel, (bsz * cs,), (512,), args, device)
    return out
