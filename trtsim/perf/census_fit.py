"""The census at the real workload: a call's count split into what each forward iteration
costs and what each request costs.

A short census workload forwards a request every few iterations, where the real one (8k/1k
at batch 1: one request in ~350 iterations) forwards far more iterations per request; a count
per forward iteration of the short run would price the per-request calls (the receive check
after a transfer, a request's first token) at the short run's rate. So the census runs three
workloads -- two output lengths at the same requests, and twice the requests -- and each
call's total per rank solves

    calls = a x forward iterations + b x requests + c      (c: once per run, the ramp)

for its rate per forward iteration (a) and per request (b). The serving simulation prices a on
every forward iteration and b on the iteration a request enters (``serving_sim``); c is
dropped (it does not grow with the run). Every count comes from trtsim's executor on the code
path the scenario names; the fit assumes only that a call is driven by iterations, requests
or neither.
"""

from __future__ import annotations

from dataclasses import dataclass

Key = tuple          # (label, group kind, group size, how the members meet)


@dataclass(frozen=True)
class CensusCount:
    """One census run of a role: its forward iterations, requests and calls per rank."""

    forward_iterations: int
    requests: int
    calls: dict          # Key -> calls per rank over the forward iterations


def _solve3(m: list[list[float]], v: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting for a 3 x 3 system."""
    a = [row[:] + [x] for row, x in zip(m, v)]
    for col in range(3):
        piv = max(range(col, 3), key=lambda r: abs(a[r][col]))
        if abs(a[piv][col]) < 1e-12:
            raise ValueError("census workloads do not separate iterations from requests")
        a[col], a[piv] = a[piv], a[col]
        for r in range(3):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col])]
    return [a[i][3] / a[i][i] for i in range(3)]


def _clean(x: float) -> float:
    return 0.0 if x < 1e-9 else round(x, 12)


def fit_rates(runs: list[CensusCount]) -> tuple[dict, dict]:
    """(calls per rank per forward iteration, calls per rank per request) of every key.

    Where the forward iterations do not grow with the output (a context server forwards each
    prompt once, whatever follows), iterations and requests cannot be told apart and every
    call is counted per forward iteration: the simulation forwards each of them too."""
    if len(runs) != 3:
        raise ValueError(f"fit_rates needs three census runs, got {len(runs)}")
    keys = sorted({k for r in runs for k in r.calls})
    m = [[float(r.forward_iterations), float(r.requests), 1.0] for r in runs]
    try:
        solved = {k: _solve3(m, [r.calls.get(k, 0.0) for r in runs]) for k in keys}
    except ValueError:
        lo, hi = min(runs, key=lambda r: r.forward_iterations), \
            max(runs, key=lambda r: r.forward_iterations)
        span = hi.forward_iterations - lo.forward_iterations
        if span <= 0:
            raise
        solved = {k: [(hi.calls.get(k, 0.0) - lo.calls.get(k, 0.0)) / span, 0.0, 0.0]
                  for k in keys}
    return ({k: _clean(v[0]) for k, v in solved.items()},
            {k: _clean(v[1]) for k, v in solved.items()})
