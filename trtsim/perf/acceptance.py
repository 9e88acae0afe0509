"""MTP acceptance per draft position, from the source a scenario names.

The simulation takes a rate per draft depth, as serving configurators take it (aiconfigurator's
``nextn_accept_rates``): ``rates[i]`` is the chance that draft i+1 is accepted once drafts 1..i
were, so a step emits 1 + the accepted prefix and the acceptance length (AL, tokens per step)
is 1 + sum over i of prod(rates[:i+1]). Two other sources turn into such a list by
TensorRT-LLM's own rule for a synthetic acceptance (``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``,
``SpecWorkerBase._apply_force_accepted_tokens``): a forced value f accepts floor(f) drafts every
step and one more with probability frac(f), capped at the K drafts; a measured AL is encoded as
the forced value AL - 1, as benchmark recipes pin a target AL. The list then reproduces the
source's mean exactly; how acceptance is split between depths is the rule's, not a measurement.
"""

from __future__ import annotations

import math
import random


def check_rates(rates: tuple[float, ...], k: int, owner: str = "acceptance") -> None:
    """``ValueError`` naming ``owner`` unless ``rates`` holds K numbers in [0, 1]."""
    if len(rates) != k:
        raise ValueError(f"{owner}={list(rates)!r}: one rate per draft depth needs {k} "
                         f"values (max_draft_len {k})")
    for r in rates:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r <= 1:
            raise ValueError(f"{owner}={list(rates)!r}: every rate must be in [0, 1]")


def rates_from_forced(accepted: float, k: int) -> tuple[float, ...]:
    """TensorRT-LLM's forced acceptance of ``accepted`` drafts per step as rates per depth."""
    if isinstance(accepted, bool) or not isinstance(accepted, (int, float)) \
            or not 0 <= accepted < math.inf:
        raise ValueError(f"force_num_accepted_tokens={accepted!r} must be a number >= 0")
    whole, frac = divmod(min(float(accepted), k), 1.0)
    rates = [1.0] * int(whole) + ([frac] if int(whole) < k else [])
    return tuple(rates + [0.0] * (k - len(rates)))


def rates_from_acceptance_length(al: float, k: int) -> tuple[float, ...]:
    """A measured acceptance length as rates per depth (the forced value AL - 1)."""
    if isinstance(al, bool) or not isinstance(al, (int, float)) or not 1 <= al <= k + 1:
        raise ValueError(f"acceptance_length={al!r} must be in [1, {k + 1}] (max_draft_len "
                         f"{k})")
    return rates_from_forced(al - 1.0, k)


def acceptance_length(rates: tuple[float, ...]) -> float:
    """Tokens per step the rates give on average: 1 + the expected accepted prefix."""
    total, reach = 1.0, 1.0
    for r in rates:
        reach *= r
        total += reach
    return total


def emitted(rng: random.Random, rates: tuple[float, ...]) -> int:
    """Tokens one step emits: 1 + the accepted prefix, each depth drawn at its rate."""
    n = 1
    for r in rates:
        if not rng.random() < r:
            break
        n += 1
    return n
