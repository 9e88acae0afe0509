"""Reports are the product: the call sites, purpose keys and report text of a few programs are
pinned (``tests/data/report_pins.json``, written from the tree before the wings moved), so a
change to where trtsim's own frames live cannot change what a user reads. Each program makes
one report on inproc: trtsim's Distributed, intercepted torch.distributed and mpi4py, two APIs
against each other, and the shipped incident scenario (trtsim's own transceiver as the site).

To re-pin after a change that alters reports on purpose: ``python tests/test_report_pins.py``."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

import trtsim
from tests import intercept_programs as IP
from tests import programs as P

PINS = pathlib.Path(__file__).parent / "data" / "report_pins.json"

# name -> (program, launch keywords); each one's inproc run raises exactly one report.
CASES = {
    "dist_skip": (P.skip_pp_allgather, dict(tp=2, pp=2)),
    "dist_purpose": (P.purpose_mismatch, dict(tp=2, pp=2)),
    "dist_cycle": (P.cross_group_cycle, dict(tp=2, pp=2)),
    "torch_zero_token": (IP.zero_token_torch, dict(tp=2, attention_dp=True, intercept=("torch",))),
    "mpi_zero_token": (IP.zero_token_mpi, dict(tp=2, attention_dp=True, intercept=("mpi",))),
    "torch_warmup": (IP.warmup_torch, dict(tp=2, attention_dp=True, intercept=("torch",))),
    "torch_against_mpi": (IP.torch_against_mpi, dict(tp=4, intercept=("torch", "mpi"))),
}


def report_of(name: str) -> dict:
    """The report one case makes: its text, and each rank's call site and purpose key."""
    prog, kw = CASES[name]
    try:
        trtsim.launch(prog, backend="inproc", **kw)
    except trtsim.CollectiveError as err:
        return {"text": str(err),
                "calls": {str(r): [c.callsite, c.purpose] for r, c in sorted(err.calls.items())}}
    raise AssertionError(f"{name}: no report")


def scenario_report() -> dict:
    result = trtsim.run("sticky_skip_pp_deadlock")
    err = result.error
    return {"text": str(err),
            "calls": {str(r): [c.callsite, c.purpose] for r, c in sorted(err.calls.items())}}


def collect() -> dict:
    pins = {name: report_of(name) for name in CASES}
    pins["scenario_sticky_skip"] = scenario_report()
    return pins


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_programs_report_is_what_it_was(name):
    pinned = json.loads(PINS.read_text())[name]
    assert report_of(name) == pinned


def test_the_incident_scenarios_report_is_what_it_was():
    pinned = json.loads(PINS.read_text())["scenario_sticky_skip"]
    assert scenario_report() == pinned


if __name__ == "__main__":
    PINS.write_text(json.dumps(collect(), indent=1, sort_keys=True) + "\n")
    sys.exit(0)
