"""The burst replay (components/planner/burst.py): `vllm bench serve --request-rate inf` stepped through with
vLLM V1's scheduling rules, on a toy step cost whose figures are worked out by hand below."""
from dataclasses import dataclass

import pytest

from components.planner.burst import burst


@dataclass
class _Cost:
    """10 ms per step, plus 1 ms per 100 prompt tokens in it."""
    def __call__(self, decode: float, prefill: float = 0.0) -> float:
        return 0.010 + prefill / 100 * 0.001


def test_prompts_that_all_fit_prefill_together_then_decode_as_one_batch():
    # 4 prompts of 100 tokens, 5 output tokens, room for all: step 1 prefills 400 tokens (14 ms, first tokens),
    # 4 decode steps of 10 ms finish them: TPOT 10 ms, TTFT 14 ms, 420 tokens in 54 ms
    r = burst(_Cost(), 4, 100, 5, kv_tokens=10_000, max_num_batched_tokens=8192, max_num_seqs=256)
    assert r.tpot_ms == pytest.approx(10.0) and r.ttft_ms == pytest.approx(14.0)
    assert r.duration_s == pytest.approx(0.054) and r.total_tps == pytest.approx(420 / 0.054)
    assert r.peak_running == 4


def test_a_kv_cache_for_one_request_runs_them_one_after_another():
    # room for one 105-token request (and the first chunk of the next): request 1 decodes while request 2 waits
    r = burst(_Cost(), 2, 100, 5, kv_tokens=110, max_num_batched_tokens=8192, max_num_seqs=256)
    # request 1: prefill (11 ms), 4 decodes (10 ms each) -> done at 51 ms; request 2 prefills at 62 ms, done at 102 ms
    assert r.ttft_ms == pytest.approx((11 + 62) / 2)
    assert r.tpot_ms == pytest.approx(10.0) and r.duration_s == pytest.approx(0.102)


def test_chunks_of_queued_prompts_slow_the_decodes_beside_them():
    # budget 150 tokens: request 1 needs one step of 100; request 2's prompt (the 50 left that step, then 50)
    # shares the steps of request 1's first decodes, which take 10 + 0.5 ms
    r = burst(_Cost(), 2, 100, 3, kv_tokens=10_000, max_num_batched_tokens=150, max_num_seqs=256)
    assert r.peak_running == 2
    assert r.tpot_ms > 10.0


def test_max_num_seqs_caps_the_batch():
    r = burst(_Cost(), 10, 10, 2, kv_tokens=10_000, max_num_batched_tokens=8192, max_num_seqs=3)
    assert r.peak_running == 3


def test_a_kv_cache_smaller_than_one_chunk_is_an_error_not_a_hang():
    with pytest.raises(ValueError, match="cannot hold one prompt chunk"):
        burst(_Cost(), 1, 100, 2, kv_tokens=50, max_num_batched_tokens=8192, max_num_seqs=8)
