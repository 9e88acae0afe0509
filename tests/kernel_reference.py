"""Plain reference implementations of trtsim.kernels, for tests only: Python loops over lists,
written from DESIGN 3.6/3.7 and the SGLang / vLLM / TensorRT-LLM semantics, sharing no code
with the kernels. Also the marker for tests that need a GPU and CuPy, and the pieces every
kernel test file shares (dtypes, hypothesis settings, the ragged MTP batch)."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
from hypothesis import HealthCheck, settings

HAS_CUPY = importlib.util.find_spec("cupy") is not None
HAS_CUDA = torch.cuda.is_available()
requires_cuda = pytest.mark.skipif(not (HAS_CUDA and HAS_CUPY),
                                   reason="needs a CUDA GPU and CuPy (pip install trtsim[gpu])")


def gpu(fn):
    """Mark a test as a GPU test that skips cleanly without CUDA or CuPy."""
    return pytest.mark.gpu(requires_cuda(fn))


FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def kernel_settings(max_examples: int):
    """Hypothesis settings for kernel property tests: no deadline (first calls compile)."""
    return settings(max_examples=max_examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def ragged_batch(g, num_context, num_gen, k, h, dtype, max_prompt):
    """A flattened MTP batch: context requests first (random prompt lengths), then generation
    requests of k + 1 tokens each. Returns input_ids [t] int32, seq_lens [r] int32, hidden [t, h]."""
    prompt_lens = torch.randint(1, max_prompt + 1, (num_context,), generator=g)
    seq_lens = torch.cat([prompt_lens, torch.full((num_gen,), k + 1)]).int()
    t = int(seq_lens.sum())
    input_ids = torch.randint(0, 1000, (t,), generator=g).int()
    hidden = torch.randn(t, h, generator=g).to(dtype)
    return input_ids, seq_lens, hidden


# ---- argmax ---------------------------------------------------------------------------------
def ref_argmax(row) -> int:
    """torch.argmax's answer on a list of floats: the first NaN, else the first maximum."""
    best_i, best_v = 0, None
    for i, v in enumerate(row):
        if math.isnan(v):
            return i
        if best_v is None or v > best_v:
            best_i, best_v = i, v
    return best_i


def rows_of(t: torch.Tensor) -> list[list[float]]:
    return t.detach().to(torch.float64).tolist()


# ---- greedy sample-and-accept ----------------------------------------------------------------
def ref_sample_accept(logits, drafts, num_context, k):
    rows = rows_of(logits)
    targets = [ref_argmax(r) for r in rows]
    drafts = [int(x) for x in drafts.reshape(-1).tolist()]
    num_gen = (len(rows) - num_context) // (k + 1)
    accepted, num = [], []
    for q in range(num_context):
        accepted.append([targets[q]] + [-1] * k)
        num.append(1)
    for g in range(num_gen):
        t = targets[num_context + g * (k + 1):num_context + (g + 1) * (k + 1)]
        d = drafts[g * k:(g + 1) * k]
        n = 0
        for j in range(k):
            if d[j] != t[j]:
                break
            n += 1
        accepted.append(t[:n + 1] + [-1] * (k - n))
        num.append(n + 1)
    return accepted, num


# ---- relaxed acceptance (TensorRT-LLM's thinking-phase rule) ---------------------------------
def ref_relaxed_accept(values, indices, drafts, slots, delta, num_context, k, relaxed_delta,
                       begin_id, end_id):
    """Returns (accepted, num, new_delta_list). ``delta`` is a list, not modified."""
    vals = values.detach().to(torch.float32)  # fp32 arithmetic, as the kernels
    idx = indices.tolist()
    drafts = [int(x) for x in drafts.reshape(-1).tolist()]
    slots = [int(s) for s in slots.tolist()]
    delta = [torch.tensor(d, dtype=torch.float32) for d in delta]
    rows = vals.shape[0]
    num_gen = (rows - num_context) // (k + 1)
    accepted, num = [], []
    for q in range(num_context + num_gen):
        toks = []
        if q < num_context:
            toks = [idx[q][0]]
        else:
            g = q - num_context
            row0 = num_context + g * (k + 1)
            for j in range(k):
                row = row0 + j
                thr = vals[row, 0] - delta[slots[q]]
                # candidates in probability order, up to the first one below the threshold
                ok_list = []
                for c in range(vals.shape[1]):
                    if c > 0 and thr > vals[row, c]:
                        break
                    ok_list.append(idx[row][c])
                if drafts[g * k + j] not in ok_list:
                    break
                toks.append(drafts[g * k + j])
            toks.append(idx[row0 + len(toks)][0])
        for t in toks:
            if t == begin_id:
                delta[slots[q]] = torch.tensor(relaxed_delta, dtype=torch.float32)
            if t == end_id:
                delta[slots[q]] = torch.tensor(0.0, dtype=torch.float32)
        accepted.append(toks + [-1] * (k + 1 - len(toks)))
        num.append(len(toks))
    return accepted, num, [float(d) for d in delta]


# ---- hidden-state ring and drafter inputs ----------------------------------------------------
def ref_update_ring(input_ids, seq_lens, hidden, num_accepted, past_tokens, past_hidden, slots,
                    num_context):
    """Returns new (past_tokens, past_hidden) as fresh tensors; inputs untouched."""
    toks = past_tokens.clone()
    hid = past_hidden.clone()
    k = toks.shape[1]
    off = 0
    for q, length in enumerate(seq_lens.tolist()):
        a = length if q < num_context else int(num_accepted[q])
        slot = int(slots[q])
        seq_t = toks[slot].tolist() + input_ids[off:off + a].tolist()
        seq_h = list(hid[slot].unbind(0)) + list(hidden[off:off + a].unbind(0))
        toks[slot] = torch.tensor(seq_t[-k:], dtype=toks.dtype)
        hid[slot] = torch.stack(seq_h[-k:])
        off += length
    return toks, hid


def ref_drafter_inputs(input_ids, seq_lens, hidden, accepted, num_accepted, past_tokens,
                       past_hidden, slots, num_context):
    k = past_tokens.shape[1]
    ids, rows = [], []
    off = 0
    for q, length in enumerate(seq_lens.tolist()):
        if q < num_context:
            prompt = input_ids[off:off + length].tolist()
            ids += prompt[1:] + [int(accepted[q, 0])]
            rows += list(hidden[off:off + length].unbind(0))
        else:
            slot = int(slots[q])
            ids += past_tokens[slot].tolist()[1:] + [int(accepted[q, int(num_accepted[q]) - 1])]
            rows += list(past_hidden[slot].unbind(0))
        off += length
    h = hidden.shape[1]
    out_h = torch.stack(rows) if rows else torch.empty((0, h), dtype=hidden.dtype)
    return torch.tensor(ids, dtype=torch.int32), out_h


# ---- trees ------------------------------------------------------------------------------------
def ref_build_tree(parent_list, selected, seq_len, topk):
    """SGLang's tree from the selected candidates, via explicit parent pointers."""
    bs, n = selected.shape[0], selected.shape[1] + 1
    mask = torch.zeros((bs, n, n), dtype=torch.bool)
    pos = []
    nxt = [[-1] * n for _ in range(bs)]
    sib = [[-1] * n for _ in range(bs)]
    for b in range(bs):
        sel = selected[b].tolist()
        plist = parent_list[b].tolist()
        node_of = {}
        for i, s in enumerate(sel):
            node_of.setdefault(s, i + 1)
        parent = [None] * n  # None: orphan / root
        for i in range(1, n):
            s = sel[i - 1]
            if s < 0:
                continue
            p = s // topk
            if p == 0:
                parent[i] = 0
            elif p < len(plist) and plist[p] in node_of:
                parent[i] = node_of[plist[p]]
        children = [[] for _ in range(n)]
        for i in range(1, n):
            if parent[i] is not None:
                children[parent[i]].append(i)
        for p in range(n):
            kids = sorted(children[p])
            if kids:
                nxt[b][p] = kids[0]
            for a, c in zip(kids, kids[1:]):
                sib[b][a] = c
        for i in range(n):
            mask[b, i, 0] = mask[b, i, i] = True
            depth, cur = 0, i
            while cur != 0 and depth < n:
                depth += 1
                if parent[cur] is None:
                    break
                cur = parent[cur]
                mask[b, i, cur] = True
            pos.append(int(seq_len[b]) + depth)
    ridx = torch.arange(bs * n, dtype=torch.int64).reshape(bs, n)
    return (mask, torch.tensor(pos, dtype=torch.int64), ridx, torch.tensor(nxt),
            torch.tensor(sib))


def random_layout(seed, bs, n, vocab):
    """A random tree per request in SGLang's layout: parents before children, children linked
    in a random sibling order; random candidates and targets over a small vocabulary."""
    g = torch.Generator().manual_seed(seed)
    nxt = torch.full((bs, n), -1, dtype=torch.int64)
    sib = torch.full((bs, n), -1, dtype=torch.int64)
    for b in range(bs):
        children = [[] for _ in range(n)]
        for i in range(1, n):
            children[int(torch.randint(i, (1,), generator=g))].append(i)
        for p, kids in enumerate(children):
            kids = [kids[j] for j in torch.randperm(len(kids), generator=g).tolist()]
            if kids:
                nxt[b, p] = kids[0]
            for a, c in zip(kids, kids[1:]):
                sib[b, a] = c
    cand = torch.randint(0, vocab, (bs, n), generator=g)
    target = torch.randint(0, vocab, (bs, n), generator=g)
    ridx = torch.arange(bs * n).reshape(bs, n)
    return cand, ridx, nxt, sib, target


def ref_verify_tree(candidates, retrive_index, next_token, next_sibling, target, s):
    bs, n = candidates.shape
    flat_t = target.reshape(-1).tolist()
    predicts = [-1] * (bs * n)
    accept_index = [[-1] * s for _ in range(bs)]
    accept_num = []
    for b in range(bs):
        cand, ridx = candidates[b].tolist(), retrive_index[b].tolist()
        nxt, sib = next_token[b].tolist(), next_sibling[b].tolist()

        def children(node):
            c, out = nxt[node], []
            while 0 <= c < n and len(out) < n:
                out.append(c)
                c = sib[c]
            return out

        cur, path = 0, [ridx[0]]
        while len(path) < s:
            match = [c for c in children(cur) if cand[c] == flat_t[path[-1]]]
            if not match:
                break
            predicts[path[-1]] = flat_t[path[-1]]
            cur = match[0]
            path.append(ridx[cur])
        predicts[path[-1]] = flat_t[path[-1]]
        accept_index[b][:len(path)] = path
        accept_num.append(len(path) - 1)
    return predicts, accept_index, accept_num


def ref_relocate_kv(kv, accept_index, accept_num, past_lens, n, slots=None):
    out = kv.clone()
    for b in range(accept_index.shape[0]):
        slot = b if slots is None else int(slots[b])
        p0 = int(past_lens[b])
        for j in range(1, min(int(accept_num[b]) + 1, accept_index.shape[1])):
            src, dst = p0 + int(accept_index[b, j]) - b * n, p0 + j
            if 0 <= src < out.shape[-2] and 0 <= dst < out.shape[-2] and src != dst:
                out[..., slot, dst, :] = out[..., slot, src, :].clone()
    return out


# ---- rejection sampling ----------------------------------------------------------------------
def ref_rejection(drafts, num_draft, draft_probs, target_probs, bonus, uniform, noise, width,
                  greedy=False):
    q_all = target_probs.detach().to(torch.float32)
    p_all = None if draft_probs is None else draft_probs.detach().to(torch.float32)
    e_all = None if noise is None else noise.detach().to(torch.float32)
    drafts = drafts.tolist()
    out = []
    off = 0
    for b, n in enumerate(num_draft.tolist()):
        row_out = []
        for k in range(n):
            x = drafts[off + k]
            q = q_all[off + k]
            if greedy:
                t = ref_argmax(q.tolist())
                row_out.append(t)
                if t != x:
                    break
                continue
            p_x = 1.0 if p_all is None else float(p_all[off + k, x])
            if p_x > 0 and float(uniform[off + k]) * p_x <= float(q[x]):
                row_out.append(x)
                continue
            if p_all is None:
                r = q.clone()
                r[x] = 0.0
            else:
                r = torch.clamp(q - p_all[off + k], min=0.0)
                r = torch.nan_to_num(r, nan=0.0)
            row_out.append(ref_argmax((r / e_all[b]).tolist()))
            break
        else:
            row_out.append(int(bonus[b]))
        out.append(row_out + [-1] * (width - len(row_out)))
        off += n
    return out
