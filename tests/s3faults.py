"""A counting, fault-injecting HTTP proxy in front of the tests' S3 server: a process of its own.

Every S3 request of a client pointed at it (obstore, delta-rs, Spark's S3A) is forwarded unchanged
(the ``Host`` header too, so that signatures hold) to the real S3 server behind it, counted by kind
(``GET``, ``LIST``, ``HEAD``, ``PUT``, ``DELETE``, ``POST``), and, where a rule says so, answered
with an error instead (``503 SlowDown``, ``500 InternalError``: the store's own XML error body,
nothing forwarded), answered late (a slow endpoint), or forwarded and then answered with an error
(a request that landed but whose answer was lost: the case that tests a client's retry of a
conditional create).

Run as ``python -m tests.s3faults --upstream http://127.0.0.1:9000``: it prints its port. Its own
paths, under ``/__faults__/``: ``GET counts`` (JSON), ``POST reset`` (counts and rules cleared),
``POST rules`` (a JSON list, each ``{"method", "path" (a regex of the path), "status", "times",
"after_forward", "delay"}``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

ADMIN = "/__faults__/"
_CODES = {500: "InternalError", 503: "SlowDown", 403: "AccessDenied"}
_HOP = {
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "expect",
}


class _State:
    """The counts and the rules, shared by the handler threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, str]] = []  # (kind, path, query)
        self.rules: list[dict[str, Any]] = []

    def take_rule(self, method: str, path: str) -> dict[str, Any] | None:
        with self.lock:
            for rule in self.rules:
                if rule.get("times", 1) <= 0:
                    continue
                if rule.get("method", method) != method or not re.search(rule.get("path", ""), path):
                    continue
                rule["times"] = rule.get("times", 1) - 1
                return dict(rule)
        return None


def kind_of(method: str, path: str, query: str) -> str:
    """A request's kind: a GET of a bucket (no key) with a listing query is a LIST.

    >>> kind_of("GET", "/b", "list-type=2"), kind_of("GET", "/b/t/x.json", ""), kind_of("PUT", "/b/k", "")
    ('LIST', 'GET', 'PUT')
    """
    if method == "GET" and path.strip("/").count("/") == 0:
        return "LIST"
    return method


def make_handler(upstream: str, state: _State) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline().strip():
                            pass
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                return b"".join(chunks)
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _admin(self, body: bytes) -> None:
            action = self.path[len(ADMIN) :]
            with state.lock:
                if action == "counts":
                    answer = json.dumps(state.requests).encode()
                elif action == "reset":
                    state.requests.clear()
                    state.rules.clear()
                    answer = b"{}"
                elif action == "rules":
                    state.rules.extend(json.loads(body))
                    answer = b"{}"
                else:
                    answer = b'{"error": "unknown"}'
            self._send(200, {"Content-Type": "application/json"}, answer)

        def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            length = str(len(body))
            for key, value in headers.items():
                if key.lower() == "content-length" and self.command == "HEAD":
                    length = value  # the object's size, which a HEAD answers without a body
                elif key.lower() not in _HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _error(self, status: int) -> None:
            code = _CODES.get(status, "InternalError")
            body = (
                f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
                f"<Message>injected by the tests' fault proxy</Message></Error>"
            ).encode()
            self._send(status, {"Content-Type": "application/xml"}, body)

        def _handle(self) -> None:
            body = self._body()
            if self.path.startswith(ADMIN):
                self._admin(body)
                return
            path, _, query = self.path.partition("?")
            with state.lock:
                state.requests.append((kind_of(self.command, path, query), path, query))
            rule = state.take_rule(self.command, path)
            if rule and rule.get("delay"):
                time.sleep(float(rule["delay"]))
            if rule and rule.get("status") and not rule.get("after_forward"):
                self._error(int(rule["status"]))
                return
            status, headers, answer = self._forward(body)
            if rule and rule.get("status"):
                self._error(int(rule["status"]))  # it landed upstream; the client hears an error
                return
            self._send(status, headers, answer)

        def _forward(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
            connection = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                if body or "Content-Length" in self.headers or self.command in ("PUT", "POST"):
                    headers["Content-Length"] = str(len(body))
                connection.request(self.command, self.path, body=body or None, headers=headers)
                response = connection.getresponse()
                return response.status, dict(response.getheaders()), response.read()
            finally:
                connection.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    return Handler


class FaultProxy:
    """A running proxy process, as the tests drive it."""

    def __init__(self, upstream: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.s3faults", "--upstream", upstream],
            stdout=subprocess.PIPE,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            start_new_session=True,
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.endpoint = f"http://127.0.0.1:{self.port}"

    def _call(self, method: str, action: str, body: bytes | None = None) -> Any:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, ADMIN + action, body=body)
            return json.loads(connection.getresponse().read())
        finally:
            connection.close()

    def rules(self, *rules: dict[str, Any]) -> None:
        self._call("POST", "rules", json.dumps(list(rules)).encode())

    def requests(self) -> list[tuple[str, str, str]]:
        """Every request since the last reset: ``(kind, path, query)``."""
        return [tuple(r) for r in self._call("GET", "counts")]  # type: ignore[misc]

    def reset(self) -> None:
        self._call("POST", "reset")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="s3faults")
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args.upstream, _State()))
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
