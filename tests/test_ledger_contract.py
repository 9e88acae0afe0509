"""The ledger and transport contracts are the type checker's to hold (``ledger_contract``,
``comm.distributed.Transport``; mypy with setup.cfg's configuration, as CI runs it): every
ledger a rank's transport is built with, and every transport a Distributed gets, conforms,
and a ledger whose ``post`` lost its match hash is an error where it is handed on."""

import textwrap

import pytest
from mypy import api

pytestmark = pytest.mark.timeout(300)

CONFORMING = """
    from trtsim.comm.distributed import Transport
    from trtsim.backends.process.ledger import Ledger
    from trtsim.backends.process.ledger_contract import RankLedger
    from trtsim.backends.process.logged import LoggedLedger, LoggedTransport
    from trtsim.backends.external.store_ledger import StoreLedger
    from trtsim.backends.process.transport import TorchTransport


    def ledgers(a: Ledger, b: StoreLedger, c: LoggedLedger) -> list[RankLedger]:
        return [a, b, c]


    def transports(a: TorchTransport, b: LoggedTransport) -> list[Transport]:
        return [a, b]
"""

LOST_DIGEST = """
    from trtsim.backends.process.logged import LoggedLedger, logged_ledger
    from trtsim.calls.records import CallRecord


    class LostDigest(LoggedLedger):
        def post(self, r: int, rec: CallRecord) -> None:  # type: ignore[override]
            super().post(r, rec)


    def handed_on(ledger: LostDigest) -> None:
        logged_ledger(ledger, None)
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, str]:
    """mypy's report per snippet (one run, its own cache)."""
    where = tmp_path_factory.mktemp("contract")
    paths = {}
    for name, text in (("conforming", CONFORMING), ("lost_digest", LOST_DIGEST)):
        paths[name] = where / f"{name}.py"
        paths[name].write_text(textwrap.dedent(text))
    out, err, _ = api.run([*map(str, paths.values()), "--config-file", "setup.cfg",
                           "--cache-dir", str(where / "cache")])
    assert not err, err
    return {name: "\n".join(line for line in out.splitlines() if line.startswith(str(path)))
            for name, path in paths.items()}


def test_every_ledger_and_transport_conforms(checked):
    assert checked["conforming"] == ""


def test_a_post_without_its_match_hash_is_a_type_error(checked):
    report = checked["lost_digest"]
    assert 'incompatible type "LostDigest"; expected "RankLedger"' in report
    assert "def post(self, r: int, rec: CallRecord) -> None" in report
