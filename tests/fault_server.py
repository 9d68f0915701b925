"""A small OpenAI-compatible HTTP server for fault injection (standard library only).

It serves ``GET /v1/models``, ``GET /version`` and ``POST /v1/completions``; a completion is a
deterministic function of the model name and the prompt (token ids or text), so a test can
tell which model answered which prompt. Faults are queued per completion request, in order:

- ``"429"`` / ``"500"`` / ``"503"`` / ``"400"``: answer that status (429 with ``Retry-After: 0``);
- ``"drop"``: close the connection without answering;
- ``"slow:<seconds>"``: sleep, then answer normally;
- ``"garbage"``: a 200 whose body is not JSON;
- ``"wrong-model"``: a 200 that names another model;
- ``"two-choices"``: a 200 with two choices;
- ``"echo-auth"``: a 500 whose body repeats the request's Authorization header;
- ``"length"``: a 200 whose choice ended at ``max_tokens`` (``finish_reason: "length"``);
- ``"reasoning:<text>"``: a 200 whose choice also carries ``reasoning_content`` ``<text>`` (a
  reasoning parser split it off the answer, as vLLM's does);
- ``"reasoning-only:<text>"``: a 200 with ``reasoning_content`` ``<text>``, ``text: null`` and
  ``finish_reason: "length"`` (the reasoning never ended).

Every answer carries ``usage.completion_tokens`` (one token per character of its text, at
most the request's ``max_tokens``: the scripted text is not cut, the count is what a server
that stopped there would report; a ``length`` finish reports exactly ``max_tokens``).

``delay(body)`` (optional) returns seconds to wait before answering a request (used to make
responses arrive out of order). With ``return_token_ids=True`` a request asking for them also
gets ``token_ids`` (``completion_ids(prompt)``) in its choice, as vLLM answers. Every request
is recorded (path, headers, JSON body) and the order completions finished in is kept in
``finished``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion_text(model: str, prompt: Any) -> str:
    """The server's deterministic answer to ``prompt`` under ``model``."""
    if isinstance(prompt, list):
        return f"{model}|ids|{len(prompt)}|{sum(prompt)}"
    return f"{model}|text|{len(prompt)}|{prompt[-5:]}"


def completion_ids(prompt: list[int]) -> list[int]:
    """The token ids the server returns with ``return_token_ids`` (vLLM's extension)."""
    return list(reversed(prompt))[:4]


class FaultServer:
    """A threaded local server; ``url`` is its API root (``http://127.0.0.1:<port>/v1``)."""

    def __init__(
        self,
        models: Sequence[str] = ("smol", "smol-lora"),
        *,
        version: str | None = "0.0-fault",
        api_key: str | None = None,
        faults: Sequence[str] = (),
        delay: Callable[[dict[str, Any]], float] | None = None,
        refuse_token_ids: bool = False,
        return_token_ids: bool = False,
    ) -> None:
        self.models = list(models)
        self.version = version
        self.api_key = api_key
        self.faults = list(faults)
        self.delay = delay
        self.refuse_token_ids = refuse_token_ids
        self.return_token_ids = return_token_ids
        self.requests: list[tuple[str, dict[str, str], Any]] = []
        self.finished: list[Any] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def completions(self) -> list[dict[str, Any]]:
        """The JSON bodies of every completion request received, in arrival order."""
        return [body for path, _, body in self.requests if path == "/v1/completions"]

    def _next_fault(self) -> str | None:
        with self.lock:
            return self.faults.pop(0) if self.faults else None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                if server.api_key is None:
                    return True
                if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return True
                self._send(401, {"error": {"message": "bad key"}})
                return False

            def do_GET(self) -> None:
                with server.lock:
                    server.requests.append((self.path, dict(self.headers), None))
                if self.path == "/version" and server.version is not None:
                    self._send(200, {"version": server.version})
                elif self.path == "/v1/models":
                    if self._authorized():
                        data = [{"id": name, "object": "model"} for name in server.models]
                        self._send(200, {"object": "list", "data": data})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"null")
                with server.lock:
                    server.requests.append((self.path, dict(self.headers), body))
                if self.path != "/v1/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                if not self._authorized():
                    return
                fault = server._next_fault()
                if server.delay is not None:
                    time.sleep(server.delay(body))
                if fault in ("429", "500", "503", "400"):
                    headers = {"Retry-After": "0"} if fault == "429" else None
                    self._send(int(fault), {"error": {"message": f"injected {fault}"}}, headers)
                    return
                if fault == "echo-auth":
                    echo = str(self.headers.get("Authorization"))
                    self._send(500, {"error": {"message": f"bad header {echo}"}})
                    return
                if fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault and fault.startswith("slow:"):
                    time.sleep(float(fault.split(":", 1)[1]))
                if fault == "garbage":
                    self._send(200, b"<html>not json</html>")
                    return
                model = body.get("model")
                if model not in server.models:
                    self._send(404, {"error": {"message": f"model {model} does not exist"}})
                    return
                if server.refuse_token_ids and isinstance(body.get("prompt"), list):
                    self._send(400, {"error": {"message": "prompt must be a string"}})
                    return
                text = completion_text(model, body["prompt"])
                finish = "length" if fault == "length" else "stop"
                choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": finish}
                if fault and fault.startswith(("reasoning:", "reasoning-only:")):
                    choice["reasoning_content"] = fault.split(":", 1)[1]
                    if fault.startswith("reasoning-only:"):
                        choice.update(text=None, finish_reason="length")
                        text, finish = "", "length"
                if server.return_token_ids and body.get("return_token_ids"):
                    choice["token_ids"] = completion_ids(body["prompt"])
                choices = [choice, {**choice, "index": 1}] if fault == "two-choices" else [choice]
                answered = "someone-else" if fault == "wrong-model" else model
                with server.lock:
                    server.finished.append(body["prompt"])
                limit = body.get("max_tokens")
                count = len(text) if not isinstance(limit, int) else min(len(text), limit)
                if finish == "length" and isinstance(limit, int):
                    count = limit  # "length" means the limit was reached (model_call checks)
                usage = {"completion_tokens": count}
                self._send(
                    200,
                    {
                        "object": "text_completion",
                        "model": answered,
                        "choices": choices,
                        "usage": usage,
                    },
                )

        return Handler
