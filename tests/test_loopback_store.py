"""The launcher's rendezvous store listens on the loopback interface only (a client on
another interface must not reach a launch's store and write keys into it)."""

import socket

import pytest

import trtsim
from tests import hygiene_programs as hp
from trtsim.backends.process.store import serve_store

pytestmark = pytest.mark.timeout(240)


def test_during_a_launch_the_store_listens_on_127_0_0_1_only():
    results = trtsim.launch(hp.store_listeners, tp=2, backend="gloo", timeout=120)
    assert results[0] == [("tcp", "127.0.0.1")], results[0]
    assert results[1] == results[0]


def test_the_store_serves_its_clients_and_is_not_reached_on_another_address():
    import torch.distributed as tdist
    store = serve_store(2, 30.0)
    client = tdist.TCPStore("127.0.0.1", store.port, 2, False)
    client.set("k", "v")
    assert store.get("k") == b"v"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("198.51.100.1", 9))   # no packet: only picks the outward address
        except OSError:
            pytest.skip("this host has no address but loopback")
        outward = probe.getsockname()[0]
    with socket.socket() as s:
        s.settimeout(5)
        assert s.connect_ex((outward, store.port)) != 0, outward
