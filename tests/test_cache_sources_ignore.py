"""An s3 / gcs copy skips the checkpoint's original/ directory as the Hub prefetch does; the streamer matches the
pattern against whole object keys (prefix included), with fnmatch."""
import fnmatch

import pytest

from components.cache.sources import WeightsSource, ignore_patterns


@pytest.mark.parametrize("uri, keys_kept, keys_skipped", [
    ("s3://models/llama-3.1-8b/", ["llama-3.1-8b/model-00001-of-00004.safetensors", "llama-3.1-8b/config.json"],
     ["llama-3.1-8b/original/consolidated.00.pth", "llama-3.1-8b/original/params.json"]),
    ("gs://models/team/llama", ["team/llama/tokenizer.json"], ["team/llama/original/tokenizer.model"]),
    ("s3://models", ["model.safetensors"], ["original/consolidated.00.pth"]),
    ("s3://models/odd[1]", ["odd[1]/model.safetensors"], ["odd[1]/original/x.pth"]),
])
def test_original_is_skipped_under_the_prefix_only(uri, keys_kept, keys_skipped):
    (pattern,) = ignore_patterns(WeightsSource("s3" if uri.startswith("s3") else "gcs", uri, service_account="r"))
    assert [k for k in keys_kept if fnmatch.fnmatch(k, pattern)] == []
    assert all(fnmatch.fnmatch(k, pattern) for k in keys_skipped)


def test_the_pattern_is_what_the_script_passes():
    assert ignore_patterns(WeightsSource("s3", "s3://models/llama-3.1-8b/", service_account="r")) == \
        ["llama-3.1-8b/original/*"]
