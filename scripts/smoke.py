#!/usr/bin/env python3
"""Send one streaming chat request through the gateway and print time to first token and tokens/s.

    python scripts/smoke.py URL [--key KEY] [--model NAME] [--prompt TEXT] [--max-tokens N]

URL is a model's base URL from `pulumi stack output gateway` (e.g. http://HOST/llama-8b/v1); the key comes
from --key or $VLLM_API_KEY. Standard library only. Exit 0 on a streamed answer, 1 on an HTTP error
(401: wrong key, 429: rate limit, 413: prompt too large), 2 on bad usage. docs/gateway.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.request


def stream_chat(url: str, key: str | None, model: str, prompt: str, max_tokens: int, timeout_s: float = 600.0):
    """POST {url}/chat/completions with stream=true; returns (ttft_s, seconds, chunks, text, usage)."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "stream": True, "stream_options": {"include_usage": True}}
    req = urllib.request.Request(url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", "Accept": "text/event-stream",
                                          **({"Authorization": f"Bearer {key}"} if key else {})})
    start = time.perf_counter()
    first, chunks, text, usage = None, 0, [], None
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            event = json.loads(data)
            usage = event.get("usage") or usage
            for choice in event.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    if first is None:
                        first = time.perf_counter() - start
                    chunks += 1
                    text.append(piece)
    return first, time.perf_counter() - start, chunks, "".join(text), usage


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("url", help="the model's base URL, ending in /v1")
    p.add_argument("--key", default=os.environ.get("VLLM_API_KEY"), help="API key (default: $VLLM_API_KEY)")
    p.add_argument("--model", help="served model name (default: the path segment before /v1)")
    p.add_argument("--prompt", default="Write one sentence about the sea.")
    p.add_argument("--max-tokens", type=int, default=64)
    a = p.parse_args(argv)
    parts = a.url.rstrip("/").split("/")
    model = a.model or (parts[-2] if len(parts) >= 2 and parts[-1] == "v1" else None)
    if not model:
        print("smoke: give --model (the URL has no /<model>/v1 path)", file=sys.stderr)
        return 2
    try:
        ttft, total, chunks, text, usage = stream_chat(a.url, a.key, model, a.prompt, a.max_tokens)
    except urllib.error.HTTPError as e:
        print(f"smoke: HTTP {e.code} {e.reason}: {e.read(300).decode('utf-8', 'replace')}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, OSError) as e:
        print(f"smoke: cannot reach {a.url}: {e}", file=sys.stderr)
        return 1
    if ttft is None:
        print("smoke: the stream carried no tokens", file=sys.stderr)
        return 1
    tokens = (usage or {}).get("completion_tokens") or chunks
    decode_s = total - ttft
    rate = (tokens - 1) / decode_s if tokens > 1 and decode_s > 0 else float("nan")
    print(text)
    print(f"TTFT {ttft * 1000:.0f} ms, {tokens} tokens in {total:.2f} s, {rate:.1f} tokens/s after the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
