"""scripts/smoke.py against a tiny local OpenAI-style streaming server: it sends the key as a Bearer token, the
model from the URL, and prints TTFT and tokens/s; a 401 is reported, not a traceback."""
from __future__ import annotations

import importlib.util
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

SMOKE = Path(__file__).resolve().parents[2] / "scripts" / "smoke.py"
spec = importlib.util.spec_from_file_location("smoke", SMOKE)
smoke = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smoke)

SEEN: list[dict] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.headers.get("Authorization") != "Bearer sk-test":
            self.send_response(401)
            self.end_headers()
            self.wfile.write(b"unauthorized")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        time.sleep(0.2)  # time to first token
        for word in ["Hello", " sea", " and", " sky"]:
            self.wfile.write(f"data: {json.dumps({'choices': [{'delta': {'content': word}}]})}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.05)
        usage = {"choices": [], "usage": {"completion_tokens": 4}}
        self.wfile.write(f"data: {json.dumps(usage)}\n\ndata: [DONE]\n\n".encode())


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    SEEN.clear()
    yield f"http://127.0.0.1:{srv.server_address[1]}/llama-8b/v1"
    srv.shutdown()


def test_prints_ttft_and_tokens_per_second(server, capsys):
    assert smoke.main([server, "--key", "sk-test"]) == 0
    out = capsys.readouterr().out
    assert "Hello sea and sky" in out
    ttft_ms = int(out.split("TTFT ")[1].split(" ms")[0])
    assert 180 <= ttft_ms < 2000
    assert "4 tokens in" in out and "tokens/s after the first" in out
    [req] = SEEN
    assert req["path"] == "/llama-8b/v1/chat/completions"
    assert req["auth"] == "Bearer sk-test"
    assert req["body"]["model"] == "llama-8b" and req["body"]["stream"] is True


def test_a_wrong_key_is_reported(server, capsys):
    assert smoke.main([server, "--key", "nope"]) == 1
    assert "HTTP 401" in capsys.readouterr().err
