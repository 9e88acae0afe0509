"""One MTP worker step, graph-replayed (the entry point's dispatch) vs eager (incident 5.1's
bypassing subclass), on CUDA at DeepSeek-V3-like drafter sizes (hidden 7168, vocabulary
129,280, bf16). CUDA events around each step, median of many after warm-up; host time per
step (what the executor waits for) too.

    python benchmarks/bench_worker_step.py [--batches 8 32 128] [--k 3] [--steps 50] [--json F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from trtsim.spec import GenerationStep, SpecConfig

REQUIRES_GPU = True  # `trtsim bench` reads this line, not the module: no CUDA GPU, exit 2


def measure(bypass: bool, batch: int, k: int, steps: int, hidden: int, vocab: int) -> dict:
    cfg = SpecConfig(max_draft_len=k, acceptance=0.7, vocab_size=vocab, hidden_size=hidden,
                     dtype="bfloat16", bypass_entry_point=bypass)
    gen = GenerationStep(cfg, seed=0, device="cuda", num_slots=max(256, batch))
    reqs = [(rid, 64) for rid in range(batch)]
    gen.run(reqs)                                   # hand-over, kernel compilation
    worker, inputs = gen.worker, gen.last_inputs
    for _ in range(3):                              # warm-up (graph capture on the first)
        worker.forward(inputs)
    torch.cuda.synchronize()
    dev_ms, host_ms = [], []
    for _ in range(steps):                          # the step as the executor waits for it
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        num, _, _ = worker.forward(inputs)
        end.record()
        num.tolist()                                # the executor reads the accepted counts
        host_ms.append((time.perf_counter() - t0) * 1e3)
        dev_ms.append(start.elapsed_time(end))
    return {"batch": batch, "k": k, "mode": "eager (bypass)" if bypass else "graph (entry point)",
            "step_ms_median": statistics.median(dev_ms), "host_ms_median": statistics.median(host_ms),
            "graph_replays": worker.num_graph_replays, "eager_steps": worker.num_eager_steps}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, nargs="+", default=[8, 32, 128])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--hidden", type=int, default=7168)
    ap.add_argument("--vocab", type=int, default=129280)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = []
    for b in args.batches:
        for bypass in (False, True):
            rows.append(measure(bypass, b, args.k, args.steps, args.hidden, args.vocab))
            r = rows[-1]
            print(f"batch {b:4d} K={args.k} {r['mode']:<22} step {r['step_ms_median']:8.3f} ms"
                  f"  host {r['host_ms_median']:8.3f} ms", flush=True)
    for b in args.batches:
        g, e = [r for r in rows if r["batch"] == b]
        print(f"batch {b:4d}: eager / graph = {e['step_ms_median'] / g['step_ms_median']:.2f}x "
              f"device, {e['host_ms_median'] / g['host_ms_median']:.2f}x host")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "hidden": args.hidden, "vocab": args.vocab, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
