"""GPU benchmark of trtsim.kernels against torch eager composites of the same functions.

For each kernel, at batch 1, 32, 256 and K = 1, 3, 5: the fused CUDA kernel (eager launch and
CUDA-graph replay), the torch eager composite, and the composite replayed from a CUDA graph.
CUDA-event timing after warm-up, the median over many measurements: eager, one event pair per
call (host launch cost included, as a Python caller sees it); graph, one event pair per replay
of a graph of several calls, divided by the calls (device time). Inputs rotate over enough
buffer sets that L2 (60 MB on an H200) cannot hold them. Every case is checked first:
the kernel against its numba CPU twin (identical outputs) and the composite against the kernel.
The fused sample-and-accept at batch 256, K=3, V=129,280 bf16 is also put against the HBM
roofline: bytes of logits read once / device-to-device copy bandwidth measured in this run.

  python benchmarks/bench_kernels.py [--quick] [--json out.json]

--quick runs batch 1 and 256 at K=3 only (well under two minutes on an H200).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trtsim import kernels as K  # noqa: E402

REQUIRES_GPU = True  # `trtsim bench` reads this line, not the module: no CUDA GPU, exit 2

VOCAB = 129_280
HIDDEN = 7168
L2_BYTES = 60 << 20


# ---- timing ---------------------------------------------------------------------------------
def time_calls(fn, arg_sets, budget_s, min_reps=20, max_reps=2000):
    """Median µs of fn(*args) over rotating arg sets, one pair of CUDA events per call."""
    for args in arg_sets[:3]:
        fn(*args)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn(*arg_sets[0])
    torch.cuda.synchronize()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = int(min(max_reps, max(min_reps, budget_s / one)))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for i, (start, end) in enumerate(events):
        args = arg_sets[i % len(arg_sets)]
        start.record()
        fn(*args)
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in events)


def graph_us(fn, arg_sets, budget_s, calls_per_graph=32):
    """Median µs per call when the calls are replayed from CUDA graphs, each graph holding
    several calls over consecutive arg sets (so host replay cost is spread over them and the
    GPU time shows); None when the function cannot be captured."""
    n = len(arg_sets)
    calls = max(8, min(calls_per_graph, n))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for args in arg_sets[:3]:
            fn(*args)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    pool = torch.cuda.graph_pool_handle()
    graphs = []
    try:
        for g0 in range(0, n, calls):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool):
                for c in range(calls):
                    fn(*arg_sets[(g0 + c) % n])
            graphs.append((g,))
    except Exception as exc:  # noqa: BLE001 - report and go on
        print(f"    (graph capture failed: {type(exc).__name__}: {exc})")
        return None
    return time_calls(lambda g: g.replay(), graphs, budget_s, min_reps=10) / calls


def copy_bandwidth():
    """Device-to-device copy bandwidth, bytes read + written per second."""
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    us = time_calls(lambda: b.copy_(a), [()], 0.5, min_reps=10, max_reps=50)
    return 2 * n / (us * 1e-6)


def n_sets(bytes_per_set):
    return int(min(256, max(2, math.ceil(3 * L2_BYTES / max(bytes_per_set, 1)))))


# ---- eager composites (torch ops only, no host sync) --------------------------------------------
def eager_sample_accept(logits, drafts, k):
    ng = logits.shape[0] // (k + 1)
    target = torch.argmax(logits, dim=-1).int().view(ng, k + 1)
    n = (drafts.view(ng, k) == target[:, :k]).int().cumprod(-1).sum(-1)
    keep = torch.arange(k + 1, device=logits.device) <= n[:, None]
    return torch.where(keep, target, -1), (n + 1).int()


def eager_relaxed(values, indices, drafts, slots, pool, k, delta, begin, end):
    ng, topk = values.shape[0] // (k + 1), values.shape[1]
    v = values.float().view(ng, k + 1, topk)
    ix = indices.view(ng, k + 1, topk)
    thr = v[:, :k, :1] - pool[slots.long()].view(ng, 1, 1)
    ok_c = (ix[:, :k] == drafts.view(ng, k, 1)) & ((v[:, :k] >= thr) |
                                                   (torch.arange(topk, device=v.device) == 0))
    n = ok_c.any(-1).int().cumprod(-1).sum(-1)
    col = torch.arange(k + 1, device=v.device)
    top1 = ix[:, :, 0].int()
    acc = torch.where(col < n[:, None], torch.cat([drafts.view(ng, k), top1[:, :1]], 1), -1)
    acc = torch.where(col == n[:, None], top1.gather(1, n[:, None].long()), acc)
    flips = ((acc == begin) | (acc == end)) & (col <= n[:, None])
    last = torch.where(flips, col, -1).max(-1).values
    tok = acc.gather(1, last.clamp(min=0)[:, None].long()).squeeze(1)
    new = torch.where(tok == end, 0.0, delta)
    cur = pool[slots.long()]
    pool.index_copy_(0, slots.long(), torch.where(last >= 0, new, cur))
    return acc, (n + 1).int()


def eager_ring(ids, hidden, num_acc, past_tokens, past_hidden, slots, k):
    ng = num_acc.shape[0]
    s = slots.long()
    col = num_acc.long()[:, None] + torch.arange(k, device=ids.device)
    toks = torch.cat([past_tokens[s], ids.view(ng, k + 1)], 1).gather(1, col)
    hid = torch.cat([past_hidden[s], hidden.view(ng, k + 1, -1)], 1)
    hid = hid.gather(1, col[:, :, None].expand(-1, -1, hid.shape[2]))
    past_tokens.index_copy_(0, s, toks)
    past_hidden.index_copy_(0, s, hid)


def eager_drafter(accepted, num_acc, past_tokens, past_hidden, slots):
    s = slots.long()
    last = accepted.gather(1, (num_acc.long() - 1)[:, None])
    ids = torch.cat([past_tokens[s][:, 1:], last], 1).reshape(-1)
    return ids, past_hidden[s].flatten(0, 1)


def eager_tree_build(parent_list, selected, seq_len, topk):
    bs, n = selected.shape[0], selected.shape[1] + 1
    dev = selected.device
    p = selected // topk
    if parent_list.shape[1] == 0:  # one level: every node hangs off the root
        parent = torch.zeros_like(selected)
    else:
        ptok = parent_list.gather(1, p.clamp(max=parent_list.shape[1] - 1))
        hit = selected[:, None, :] == ptok[:, :, None]
        parent = torch.where(p == 0, 0, hit.int().argmax(-1) + 1)  # parent of node i+1
    parent = torch.cat([torch.full((bs, 1), -1, device=dev, dtype=parent.dtype), parent], 1)
    idx = torch.arange(n, device=dev)
    same = (parent[:, None, :] == parent[:, :, None]) & (idx[None, None, :] > idx[None, :, None])
    sib = torch.where(same, idx, n).min(-1).values
    sib = torch.where(sib == n, -1, sib)
    child = (parent[:, None, :] == idx[None, :, None]) & (idx > 0)
    nxt = torch.where(child, idx, n).min(-1).values
    nxt = torch.where(nxt == n, -1, nxt)
    mask = torch.zeros((bs, n, n), dtype=torch.bool, device=dev)
    mask[:, :, 0] = True
    cur = idx.expand(bs, n)
    depth = torch.zeros((bs, n), dtype=torch.long, device=dev)
    for _ in range(n):
        mask.scatter_(2, cur.clamp(min=0)[:, :, None], True)  # column 0 is set anyway
        up = cur > 0
        depth += up
        cur = torch.where(up, parent.gather(1, cur.clamp(min=0)), -1)
    ridx = torch.arange(bs * n, device=dev).view(bs, n)
    return mask, (seq_len[:, None] + depth).reshape(-1), ridx, nxt, sib


def eager_tree_verify(cand, ridx, nxt, sib, target, s, max_kids):
    bs, n = cand.shape
    dev = cand.device
    flat_t = target.reshape(-1)
    predicts = torch.full((bs * n + 1,), -1, dtype=torch.int32, device=dev)  # last: a sink
    acc_idx = torch.full((bs, s), -1, dtype=torch.int32, device=dev)
    last = ridx[:, 0]
    acc_idx[:, 0] = last.int()
    cur = torch.zeros(bs, dtype=torch.long, device=dev)
    alive = torch.ones(bs, dtype=torch.bool, device=dev)
    num = torch.zeros(bs, dtype=torch.int32, device=dev)
    rows = torch.arange(bs, device=dev)
    for j in range(1, s):
        child = torch.where(alive, nxt[rows, cur], -1)
        found = torch.full((bs,), -1, dtype=torch.long, device=dev)
        want = flat_t[last]
        for _ in range(max_kids):
            ok = (child >= 0) & (found < 0)
            match = ok & (cand[rows, child.clamp(min=0)] == want)
            found = torch.where(match, child, found)
            child = torch.where(ok & ~match, sib[rows, child.clamp(min=0)], -1)
        alive = alive & (found >= 0)
        predicts.index_put_((torch.where(alive, last, bs * n),), want.int())
        last = torch.where(alive, ridx[rows, found.clamp(min=0)], last)
        acc_idx[:, j] = torch.where(alive, last.int(), -1)
        num += alive.int()
        cur = torch.where(alive, found, cur)
    predicts[last] = flat_t[last].int()
    return predicts[:-1], acc_idx, num


def eager_relocate(kv, accept_index, accept_num, past, slots, n):
    bs, s = accept_index.shape
    rows = torch.arange(bs, device=kv.device)
    j = torch.arange(s, device=kv.device)
    src = past[:, None] + accept_index.long() - rows[:, None] * n
    dst = past[:, None] + j
    valid = (j >= 1) & (j <= accept_num[:, None])
    src = torch.where(valid, src, dst)
    sl = slots.long()[:, None].expand(bs, s)
    kv[:, sl, dst] = kv[:, sl, src]


def eager_rejection(drafts, draft_probs, target, bonus, u, noise, k):
    bs = bonus.shape[0]
    x = drafts.long()[:, None]
    q_x = target.gather(1, x).squeeze(1)
    p_x = draft_probs.gather(1, x).squeeze(1)
    accept = (p_x > 0) & (u * p_x.double() <= q_x.double())
    n = accept.view(bs, k).int().cumprod(-1).sum(-1)
    r = (target - draft_probs).clamp(min=0).view(bs, k, -1) / noise[:, None, :]
    rec = r.argmax(-1).int()
    col = torch.arange(k + 1, device=drafts.device)
    d = torch.cat([drafts.view(bs, k), bonus[:, None]], 1)
    rec = torch.cat([rec, bonus[:, None]], 1)
    out = torch.where(col < n[:, None], d, torch.where(col == n[:, None], rec, -1))
    return out


# ---- cases ------------------------------------------------------------------------------------
def bench_case(name, batch, k, make_sets, fused, eager, check, budget, extra=None):
    sets = make_sets()
    check(sets[0])
    row = {"kernel": name, "batch": batch, "K": k, "buffers": len(sets)}
    row["fused_us"] = time_calls(fused, sets, budget)
    row["fused_graph_us"] = graph_us(fused, sets, budget)
    row["eager_us"] = time_calls(eager, sets, budget)
    row["eager_graph_us"] = graph_us(eager, sets, budget)
    row["speedup_vs_eager"] = row["eager_us"] / row["fused_us"]
    if extra:
        row.update(extra)
    del sets
    torch.cuda.empty_cache()
    print(f"  {name:22s} B={batch:<4d} K={k}  fused {row['fused_us']:9.1f} us  "
          f"(graph {fmt(row['fused_graph_us'])})  eager {row['eager_us']:9.1f} us  "
          f"(graph {fmt(row['eager_graph_us'])})  x{row['speedup_vs_eager']:.1f}", flush=True)
    return row


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def same(a, b, what):
    a, b = (t.cpu() for t in a), (t.cpu() for t in b)
    for i, (x, y) in enumerate(zip(a, b)):
        if not torch.equal(x, y):
            raise AssertionError(f"{what}: output {i} differs")


def gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def case_sample_accept(batch, k, budget, dtype=torch.bfloat16, vocab=VOCAB):
    rows = batch * (k + 1)

    def make():
        g = gen(batch * 10 + k)
        out = []
        for _ in range(n_sets(rows * vocab * 2)):
            logits = torch.randn(rows, vocab, device="cuda", generator=g).to(dtype)
            t = logits.argmax(-1).view(batch, k + 1)[:, :k].int()
            flip = torch.rand(batch, k, device="cuda", generator=g) < 0.3
            out.append((logits, torch.where(flip, (t + 1) % vocab, t).reshape(-1)))
        return out

    def check(args):
        logits, drafts = args
        got = K.mtp_sample_and_accept(logits, drafts, 0, k)
        same(got, K.mtp_sample_and_accept(logits.cpu(), drafts.cpu(), 0, k), "sample_accept")
        same(got, eager_sample_accept(logits, drafts, k), "sample_accept eager")

    return bench_case("sample_accept", batch, k, make,
                      lambda lg, d: K.mtp_sample_and_accept(lg, d, 0, k),
                      lambda lg, d: eager_sample_accept(lg, d, k), check, budget,
                      {"bytes": rows * vocab * 2})


def case_relaxed(batch, k, budget, topk=8):
    rows = batch * (k + 1)

    def make():
        g = gen(batch + k)
        out = []
        for _ in range(n_sets(rows * topk * 12)):
            p = torch.softmax(torch.randn(rows, 64, device="cuda", generator=g), -1)
            v, ix = torch.topk(p, topk, -1)
            d = ix[:, 1].view(batch, k + 1)[:, :k].reshape(-1).int()
            slots = torch.randperm(2 * batch, device="cuda", generator=g)[:batch].int()
            pool = torch.full((2 * batch,), 0.3, device="cuda")
            out.append((v, ix.int(), d, slots, pool))
        return out

    def check(args):
        v, ix, d, slots, pool = args
        p1, p2, p3 = pool.clone(), pool.clone(), pool.cpu().clone()
        got = K.relaxed_accept(v, ix, d, slots, p1, 0, k, 0.5, 3, 4)
        same(got, K.relaxed_accept(v.cpu(), ix.cpu(), d.cpu(), slots.cpu(), p3, 0, k, 0.5, 3, 4),
             "relaxed")
        same(got, eager_relaxed(v, ix, d, slots, p2, k, 0.5, 3, 4), "relaxed eager")
        same((p1,), (p2,), "relaxed eager delta")

    return bench_case("relaxed_accept", batch, k, make,
                      lambda v, ix, d, s, p: K.relaxed_accept(v, ix, d, s, p, 0, k, 0.5, 3, 4),
                      lambda v, ix, d, s, p: eager_relaxed(v, ix, d, s, p, k, 0.5, 3, 4),
                      check, budget)


def ring_inputs(batch, k, g):
    ids = torch.randint(0, 1000, (batch * (k + 1),), device="cuda", generator=g).int()
    hidden = torch.randn(batch * (k + 1), HIDDEN, device="cuda", generator=g).bfloat16()
    num = torch.randint(1, k + 2, (batch,), device="cuda", generator=g).int()
    slots = torch.randperm(2 * batch, device="cuda", generator=g)[:batch].int()
    pt = torch.randint(0, 1000, (2 * batch, k), device="cuda", generator=g).int()
    ph = torch.randn(2 * batch, k, HIDDEN, device="cuda", generator=g).bfloat16()
    return ids, hidden, num, pt, ph, slots


def case_ring(batch, k, budget):
    seq = torch.full((batch,), k + 1, dtype=torch.int32, device="cuda")

    def make():
        g = gen(3 * batch + k)
        return [ring_inputs(batch, k, g) for _ in range(n_sets(batch * (3 * k + 1) * HIDDEN * 2))]

    def check(args):
        ids, hidden, num, pt, ph, slots = args
        a = [pt.clone(), ph.clone()]
        b = [pt.clone(), ph.clone()]
        c = [pt.cpu(), ph.cpu()]
        K.update_hidden_ring(ids, seq, hidden, num, *a, slots, 0)
        K.update_hidden_ring(ids.cpu(), seq.cpu(), hidden.cpu(), num.cpu(), *c, slots.cpu(), 0)
        eager_ring(ids, hidden, num, *b, slots, k)
        same(a, c, "hidden_ring")
        same(a, b, "hidden_ring eager")

    return bench_case("update_hidden_ring", batch, k, make,
                      lambda i, h, n, pt, ph, s: K.update_hidden_ring(i, seq, h, n, pt, ph, s, 0),
                      lambda i, h, n, pt, ph, s: eager_ring(i, h, n, pt, ph, s, k), check, budget)


def case_drafter(batch, k, budget):
    seq = torch.full((batch,), k + 1, dtype=torch.int32, device="cuda")

    def make():
        g = gen(5 * batch + k)
        out = []
        for _ in range(n_sets(batch * (3 * k + 1) * HIDDEN * 2)):
            ids, hidden, num, pt, ph, slots = ring_inputs(batch, k, g)
            acc = torch.randint(0, 1000, (batch, k + 1), device="cuda", generator=g).int()
            out.append((ids, hidden, acc, num, pt, ph, slots))
        return out

    def check(args):
        got = K.prepare_drafter_inputs(args[0], seq, *args[1:], 0)
        same(got, K.prepare_drafter_inputs(args[0].cpu(), seq.cpu(),
                                           *(t.cpu() for t in args[1:]), 0), "drafter")
        same(got, eager_drafter(*args[2:]), "drafter eager")

    return bench_case("prepare_drafter_inputs", batch, k, make,
                      lambda i, h, a, n, pt, ph, s: K.prepare_drafter_inputs(i, seq, h, a, n, pt,
                                                                             ph, s, 0),
                      lambda i, h, a, n, pt, ph, s: eager_drafter(a, n, pt, ph, s), check, budget)


def tree_inputs(batch, k, g, topk=4):
    depth = k
    n = 1 + min(topk + (depth - 1) * topk * topk, 8 * k)
    levels, scores = [], None
    for level in range(depth):
        rows = batch if level == 0 else batch * topk
        p = torch.softmax(torch.randn(rows, 64, device="cuda", generator=g), -1)
        v, ix = torch.topk(p, topk, -1)
        lv = K.expand_tree_level(level, v, ix, scores, topk)
        levels.append(lv)
        scores = lv.scores
    verified = torch.randint(0, 64, (batch,), device="cuda", generator=g)
    parent_list, selected, drafts = K.select_tree_candidates(levels, verified, n)
    seq_len = torch.randint(0, 4000, (batch,), device="cuda", generator=g)
    return parent_list, selected, seq_len, drafts, n, topk


def path_target(drafts, nxt, g, follow=0.8):
    """Targets that pick each node's first child with probability `follow` (long paths)."""
    first = drafts.gather(1, nxt.clamp(min=0))
    keep = (torch.rand(nxt.shape, device=nxt.device, generator=g) < follow) & (nxt >= 0)
    return torch.where(keep, first, drafts.roll(-2, 1))


def case_tree_build(batch, k, budget):
    def make():
        g = gen(7 * batch + k)
        return [tree_inputs(batch, k, g)[:3] for _ in range(8)]

    topk = 4

    def check(args):
        got = K.build_dynamic_tree(*args, topk)
        same(got, K.build_dynamic_tree(*(t.cpu() for t in args), topk), "tree_build")
        same(got, eager_tree_build(*args, topk), "tree_build eager")

    return bench_case("build_dynamic_tree", batch, k, make,
                      lambda pl, sel, sl: K.build_dynamic_tree(pl, sel, sl, topk),
                      lambda pl, sel, sl: eager_tree_build(pl, sel, sl, topk), check, budget)


def case_tree_verify(batch, k, budget):
    s = k + 1
    holder = {}

    def make():
        g = gen(11 * batch + k)
        out = []
        for _ in range(8):
            pl, sel, sl, drafts, n, topk = tree_inputs(batch, k, g)
            _, _, ridx, nxt, sib = K.build_dynamic_tree(pl, sel, sl, topk)
            target = path_target(drafts, nxt, g)
            out.append((drafts, ridx, nxt, sib, target))
        holder["kids"] = topk
        return out

    def check(args):
        got = K.verify_tree_greedy(*args, s)
        same(got, K.verify_tree_greedy(*(t.cpu() for t in args), s), "tree_verify")
        same(got, eager_tree_verify(*args, s, holder["kids"]), "tree_verify eager")

    return bench_case("verify_tree_greedy", batch, k, make,
                      lambda *a: K.verify_tree_greedy(*a, s),
                      lambda *a: eager_tree_verify(*a, s, holder["kids"]), check, budget)


def case_relocate(batch, k, budget, d=576, layers=61):
    s, max_seq = k + 1, 256

    def make():
        g = gen(13 * batch + k)
        out = []
        for _ in range(2):
            pl, sel, sl, drafts, n, topk = tree_inputs(batch, k, g)
            _, _, ridx, nxt, sib = K.build_dynamic_tree(pl, sel, sl, topk)
            _, acc_idx, acc_num = K.verify_tree_greedy(drafts, ridx, nxt, sib,
                                                       path_target(drafts, nxt, g), s)
            kv = torch.randn(layers, batch, max_seq, d, device="cuda", generator=g).bfloat16()
            past = torch.randint(0, max_seq - n, (batch,), device="cuda", generator=g)
            slots = torch.arange(batch, device="cuda", dtype=torch.int32)
            out.append((kv, acc_idx, acc_num, past, slots, n))
        return out

    def check(args):
        kv, acc_idx, acc_num, past, slots, n = args
        a, b, c = kv.clone(), kv.clone(), kv.cpu()
        K.relocate_kv(a, acc_idx, acc_num, past, n, slots)
        K.relocate_kv(c, acc_idx.cpu(), acc_num.cpu(), past.cpu(), n, slots.cpu())
        eager_relocate(b, acc_idx, acc_num, past, slots, n)
        same((a,), (c,), "relocate")
        same((a,), (b,), "relocate eager")

    return bench_case("relocate_kv", batch, k, make,
                      lambda kv, ai, an, p, sl, n: K.relocate_kv(kv, ai, an, p, n, sl),
                      lambda kv, ai, an, p, sl, n: eager_relocate(kv, ai, an, p, sl, n), check,
                      budget)


def case_rejection(batch, k, budget, vocab=VOCAB):
    t = batch * k

    def make():
        g = gen(17 * batch + k)
        out = []
        for _ in range(n_sets(t * vocab * 8 + batch * vocab * 4)):
            q = torch.softmax(torch.randn(t, vocab, device="cuda", generator=g) * 3, -1)
            p = torch.softmax(torch.randn(t, vocab, device="cuda", generator=g) * 3, -1)
            d = torch.multinomial(p, 1, generator=g).reshape(-1).int()
            bonus = torch.randint(0, vocab, (batch,), device="cuda", generator=g).int()
            u = torch.rand(t, device="cuda", generator=g, dtype=torch.float64)
            e = torch.empty(batch, vocab, device="cuda").exponential_(generator=g)
            out.append((d, p, q, bonus, u, e))
        return out

    num = torch.full((batch,), k, dtype=torch.int32, device="cuda")

    def check(args):
        d, p, q, bonus, u, e = args
        got = K.rejection_sample(d, num, p, q, bonus, u, e, max_spec_len=k)
        want = K.rejection_sample(d.cpu(), num.cpu(), p.cpu(), q.cpu(), bonus.cpu(), u.cpu(),
                                  e.cpu())
        same((got,), (want,), "rejection")
        same((got,), (eager_rejection(d, p, q, bonus, u, e, k),), "rejection eager")

    return bench_case("rejection_sample", batch, k, make,
                      lambda d, p, q, b, u, e: K.rejection_sample(d, num, p, q, b, u, e,
                                                                  max_spec_len=k),
                      lambda d, p, q, b, u, e: eager_rejection(d, p, q, b, u, e, k), check,
                      budget)


CASES = {
    "sample_accept": case_sample_accept, "relaxed_accept": case_relaxed,
    "update_hidden_ring": case_ring, "prepare_drafter_inputs": case_drafter,
    "build_dynamic_tree": case_tree_build, "verify_tree_greedy": case_tree_verify,
    "relocate_kv": case_relocate, "rejection_sample": case_rejection,
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="batch 1 and 256 at K=3 only")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="kernels to run")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("bench_kernels: needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = True
    batches, ks = ((1, 256), (3,)) if args.quick else ((1, 32, 256), (1, 3, 5))
    budget = 0.15 if args.quick else 0.5
    started = time.perf_counter()
    bw = copy_bandwidth()
    print(f"{torch.cuda.get_device_name()}  copy bandwidth {bw / 1e12:.2f} TB/s (read+write)")
    rows = []
    for name in args.only or CASES:
        for batch in batches:
            for k in ks:
                rows.append(CASES[name](batch, k, budget))
    # the roofline case: logits of batch 256, K=3, V=129,280 bf16 read once
    roof = next((r for r in rows if r["kernel"] == "sample_accept" and r["batch"] == 256
                 and r["K"] == 3), None)
    if roof is None and (args.only is None or "sample_accept" in args.only):
        roof = case_sample_accept(256, 3, budget)
        rows.append(roof)
    summary = {}
    if roof is not None:
        floor_us = roof["bytes"] / bw * 1e6
        best = min(x for x in (roof["fused_us"], roof["fused_graph_us"]) if x)
        summary = {"roofline_us": floor_us, "fused_us": best,
                   "x_roofline": best / floor_us, "target_x_roofline": 1.3}
    print("\nkernel                  B     K    fused us   fused(g)   eager us   eager(g)  speedup")
    for r in rows:
        print(f"{r['kernel']:22s} {r['batch']:4d} {r['K']:4d} {r['fused_us']:10.1f} "
              f"{fmt(r['fused_graph_us']):>10s} {r['eager_us']:10.1f} "
              f"{fmt(r['eager_graph_us']):>10s} {r['speedup_vs_eager']:8.1f}")
    if summary:
        print(f"\nsample_accept B=256 K=3 V={VOCAB} bf16: {summary['fused_us']:.1f} us, roofline "
              f"{summary['roofline_us']:.1f} us ({summary['x_roofline']:.2f}x; target <= 1.3x)")
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "copy_bandwidth_Bps": bw, "quick": args.quick, "results": rows,
            "roofline": summary}, indent=2))


if __name__ == "__main__":
    main()
