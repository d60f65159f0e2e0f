"""A loopback OpenAI-compatible server that answers 401 and echoes the API key it received in the error body.

It echoes the key whole, cut short by a long message, starred the way OpenAI shows it (``sk-proj-****wxyz``),
or cut short with dots or an ellipsis (``sk-proj-Zq81...``, ``...Yz1234567890``, ``sk-proj…7890``);
:data:`REVEALED` gives the part of the key each echo shows, which must not be shown.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ECHOES", "REVEALED", "EchoServer", "base_url", "echo_server", "new_key", "send", "send_json", "serving"]

ECHOES = {
    "whole": lambda key: f"Incorrect API key provided: {key}. You can find your API key at https://example.test.",
    "cut short": lambda key: "x" * 250 + f" Incorrect API key provided: {key}",  # _one_line cuts at 300: mid-key
    "starred": lambda key: f"Incorrect API key provided: {key[:8]}{'*' * 36}{key[-4:]}. You can find it online.",
    "dots, its start": lambda key: f"Incorrect API key provided: {key[:12]}... is not valid.",
    "dots, its end": lambda key: f"Incorrect API key provided: ...{key[-12:]} is not valid.",
    "dots, both ends": lambda key: f"Incorrect API key provided: {key[:8]}...{key[-4:]}.",
    "ellipsis, both ends": lambda key: f"Incorrect API key provided: {key[:7]}…{key[-4:]}.",
}
REVEALED = {
    "whole": lambda key: key,
    "cut short": lambda key: key[:16],
    "starred": lambda key: key[-4:] + ".",
    "dots, its start": lambda key: key[:12],
    "dots, its end": lambda key: key[-12:],
    "dots, both ends": lambda key: key[-4:] + ".",
    "ellipsis, both ends": lambda key: key[-4:] + ".",
}


def send(handler: BaseHTTPRequestHandler, status: int, content_type: str, data: bytes) -> None:
    """Answer the request ``handler`` serves with ``status`` and ``data`` of ``content_type``."""
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    """Answer the request ``handler`` serves with ``status`` and ``body`` as JSON."""
    send(handler, status, "application/json", json.dumps(body).encode())


class EchoServer(ThreadingHTTPServer):
    echo = "whole"


class _Handler(BaseHTTPRequestHandler):
    server: EchoServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        body = {"error": {"message": ECHOES[self.server.echo](key), "type": "invalid_request_error",
                          "code": "invalid_api_key"}}  # fmt: skip
        send_json(self, 401, body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """Serve ``server`` on a thread until the block ends, then close it."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def echo_server(echo: str = "whole") -> Iterator[EchoServer]:
    """Serve on a free loopback port until the block ends; ``echo`` is one of :data:`ECHOES`."""
    server = EchoServer(("127.0.0.1", 0), _Handler)
    server.echo = echo
    with serving(server):
        yield server


def new_key() -> str:
    return "sk-proj-" + secrets.token_urlsafe(48)


def base_url(server: EchoServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"
