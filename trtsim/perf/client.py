"""Serving-benchmark metrics from per-request timestamps (pure; the names of DESIGN 3.8).

Definitions, as the serving benchmark computes them:
  ttft   first token time - send time (in disaggregated serving it includes the context
         prefill and the KV transfer);
  tpot   (e2el - ttft) / (output tokens - 1), requests of more than one token;
  itl    every interval between consecutive streamed chunks (a chunk is one generation
         step's tokens; with MTP one chunk carries the accepted tokens);
  e2el   last token time - send time;
  output_throughput = output tokens / duration; total_token_throughput = (input + output)
  / duration; request_throughput = requests / duration; user_throughput = mean over
  requests of output tokens / e2el (tok/s one user sees); duration from the first send to
  the last token; avg_decoded_tokens_per_iter = tokens per generation step (the AL).
Times are seconds; *_ms metrics are milliseconds.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field


@dataclass
class RequestRecord:
    """One request as the client saw it."""

    send: float
    input_len: int
    output_len: int = 0
    first_token: float | None = None
    chunks: list[float] = field(default_factory=list)     # arrival time of each streamed chunk
    steps: int = 0                                         # generation steps that produced it

    @property
    def end(self) -> float:
        return self.chunks[-1] if self.chunks else (self.first_token or self.send)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _stats(name: str, values_s: list[float]) -> dict[str, float]:
    ms = [v * 1e3 for v in values_s]
    return {f"mean_{name}_ms": statistics.fmean(ms) if ms else 0.0,
            f"median_{name}_ms": statistics.median(ms) if ms else 0.0,
            f"p99_{name}_ms": _pct(ms, 0.99)}


def serving_metrics(records: list[RequestRecord], duration: float | None = None) -> dict:
    """The benchmark's metrics over completed requests."""
    done = [r for r in records if r.first_token is not None and r.output_len > 0]
    if not done:
        raise ValueError("no completed request to measure")
    if duration is None:
        duration = max(r.end for r in done) - min(r.send for r in done)
    out_tokens = sum(r.output_len for r in done)
    in_tokens = sum(r.input_len for r in done)
    ttft = [r.first_token - r.send for r in done]
    e2el = [r.end - r.send for r in done]
    tpot = [(r.end - r.first_token) / (r.output_len - 1) for r in done if r.output_len > 1]
    itl = [b - a for r in done for a, b in zip([r.first_token] + r.chunks, r.chunks) if b > a]
    steps = sum(r.steps for r in done)
    metrics = {
        "completed": len(done),
        "duration": duration,
        "request_throughput": len(done) / duration,
        "output_throughput": out_tokens / duration,
        "total_token_throughput": (in_tokens + out_tokens) / duration,
        "user_throughput": statistics.fmean(r.output_len / e for r, e in zip(done, e2el) if e > 0),
    }
    for name, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        metrics.update(_stats(name, values))
    # the first token comes from the context instance; the steps emit the rest
    metrics["avg_decoded_tokens_per_iter"] = (out_tokens - len(done)) / steps if steps else 0.0
    return metrics
