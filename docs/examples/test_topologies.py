from hypothesis import given, settings
import trtsim
import trtsim.strategies as ts

@settings(max_examples=10, deadline=None)
@given(topology=ts.topology_ids(), requests=ts.transfer_requests(max_requests=3))
def test_the_guarded_skip_moves_every_block(topology, requests):
    result = trtsim.run("kv_transfer", overrides={
        "topology": topology, "workload.requests": requests,
        "transceiver.sticky_skip": "guarded", "guard": "lockstep"})
    assert result.verdict == "ok" and result.kv_verified
