"""A call log wraps the rank's ledger and transport and keeps their contracts: ``post``
returns the match hash (the transport's fast path compares it), and the transport it wraps is
left as it was built."""

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

import trtsim
from tests import hygiene_programs as hp
from trtsim.guard.policy import GuardPolicy
from trtsim.comm.launch_config import LaunchConfig
from trtsim.backends.process import call_log_writer
from trtsim.backends.process.logged import LoggedTransport, logged_ledger
from trtsim.backends.process.ledger import Ledger
from trtsim.backends.process.record_codec import match_hash
from trtsim.backends.process.transport import TorchTransport
from trtsim.calls.records import CallRecord
from trtsim.layout.topology import InstanceSpec
from trtsim.layout.places import InstanceLayout, rank_places

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def logger(tmp_path):
    places = rank_places([InstanceLayout("", "", InstanceSpec(tp_size=2))])
    log = call_log_writer.start(LaunchConfig("gloo", timeout=600, log_dir=str(tmp_path)), 0, places)
    yield log
    log.close("done")


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])   # one log serves all
@given(seq=st.integers(1, 10**6), label=st.one_of(st.none(), st.text(max_size=8)),
       iteration=st.integers(0, 10**6))
def test_a_logged_post_returns_the_ledgers_match_hash(logger, seq, label, iteration):
    rec = CallRecord("allgather", seq, label, iteration, "a.py:1 in f", "object", 0, 0, "",
                     "tp", (0, 1))
    ledger = Ledger.create(2)
    try:
        logged = logged_ledger(ledger, logger)
        assert logged is not ledger
        assert logged.post(0, rec) == match_hash(rec) == ledger.read_seq_hash(0, rec)[1]
        assert logger.status == "blocked"          # and the log heard of it
    finally:
        ledger.close()


def test_no_log_no_wrapper():
    ledger = Ledger.create(1)
    try:
        assert logged_ledger(ledger, None) is ledger
    finally:
        ledger.close()


def test_logging_wraps_the_transport_and_changes_nothing_in_it(logger):
    ledger = Ledger.create(1)
    try:
        transport = TorchTransport(0, ledger, {}, GuardPolicy("strict"), torch.device("cpu"),
                                   lambda err: None)
        before = dict(vars(transport))
        wrapped = LoggedTransport(transport, logger)
        assert vars(transport) == before and transport.ledger is ledger
        assert wrapped.ledger is ledger and wrapped.rank == 0      # the rest passes through
    finally:
        ledger.close()


@pytest.mark.parametrize("log", [False, True])
def test_the_fast_path_is_taken_with_a_call_log(tmp_path, log):
    calls = 30
    results = trtsim.launch(hp.count_full_reads, tp=2, pp=2, backend="gloo", args=(calls,),
                            timeout=120, log_dir=str(tmp_path) if log else None)
    kind = "LoggedTransport" if log else "TorchTransport"
    assert list(results) == [(0, kind)] * 4, list(results)
    if log:                                 # one launch's four logs
        names = sorted(p.name for p in tmp_path.iterdir())
        launch = names[0].split("_")[2]
        assert names == [f"trtsim_calls_{launch}_rank{r}.json" for r in range(4)]
