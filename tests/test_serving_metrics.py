"""Serving-benchmark metrics from a hand-made timeline equal the hand computation."""

import pytest

from trtsim.perf.client import RequestRecord, serving_metrics


def test_metrics_of_a_hand_made_timeline():
    # request A: sent 0, first token 1.0, chunks at 1.5 and 2.0, 5 tokens in 2 steps
    a = RequestRecord(send=0.0, input_len=100, output_len=5, first_token=1.0, chunks=[1.5, 2.0],
                      steps=2)
    # request B: sent 0.5, first token 2.5, one chunk at 4.5, 3 tokens in 1 step
    b = RequestRecord(send=0.5, input_len=50, output_len=3, first_token=2.5, chunks=[4.5],
                      steps=1)
    m = serving_metrics([a, b])
    assert m["duration"] == pytest.approx(4.5)                  # 0.0 .. 4.5
    assert m["output_throughput"] == pytest.approx(8 / 4.5)
    assert m["total_token_throughput"] == pytest.approx(158 / 4.5)
    assert m["request_throughput"] == pytest.approx(2 / 4.5)
    assert m["mean_ttft_ms"] == pytest.approx((1.0 + 2.0) / 2 * 1e3)
    assert m["mean_e2el_ms"] == pytest.approx((2.0 + 4.0) / 2 * 1e3)
    assert m["mean_tpot_ms"] == pytest.approx(((2.0 - 1.0) / 4 + (4.5 - 2.5) / 2) / 2 * 1e3)
    assert m["mean_itl_ms"] == pytest.approx((0.5 + 0.5 + 2.0) / 3 * 1e3)
    assert m["median_itl_ms"] == pytest.approx(500.0)
    assert m["user_throughput"] == pytest.approx((5 / 2.0 + 3 / 4.0) / 2)
    assert m["avg_decoded_tokens_per_iter"] == pytest.approx((5 - 1 + 3 - 1) / 3)


def test_p99_interpolates():
    recs = [RequestRecord(0.0, 10, 2, first_token=t, chunks=[t + 1], steps=1)
            for t in [float(i) for i in range(1, 101)]]
    assert serving_metrics(recs)["p99_ttft_ms"] == pytest.approx(99.01 * 1e3)


def test_nothing_completed_is_an_error():
    with pytest.raises(ValueError, match="no completed request"):
        serving_metrics([RequestRecord(0.0, 10)])
