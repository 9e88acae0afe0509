"""The transfer test on the process backend (gloo p2p carries the blocks): a handful."""

import pytest

from trtsim.jobs.run import run

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("tid,window", [("tp2_pp2", None), ("tp4_dp_to_tp2pp2", 24),
                                        ("mla_tp2_to_pp2", [256, 24]), ("5L_tp1_pp3", None)])
def test_transfer_on_gloo(tid, window):
    res = run("scenarios/kv_transfer.yaml", backend="gloo",
              overrides={"topology": tid, "model.window": window})
    assert res.verdict == "ok" and res.kv_verified is True, res.summary()
    inproc = run("scenarios/kv_transfer.yaml", overrides={"topology": tid, "model.window": window})
    assert res.metrics == inproc.metrics
    assert res.census.rows == inproc.census.rows
