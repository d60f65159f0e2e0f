"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers with scripted replies, in order.

The Haystack examples under ``examples/haystack/`` build ``OpenAIChatGenerator()`` as Haystack's docs do; they run
unchanged against this server through ``OPENAI_BASE_URL``. It records every request body, so tests can check what
the model was sent (messages, tool schemas).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def text_reply(text: str) -> dict[str, Any]:
    """A chat-completions message with text only."""
    return {"role": "assistant", "content": text}


def tool_call_reply(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    """A chat-completions message with one tool call."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class ScriptedOpenAI:
    """The replies to serve, and the request bodies received."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.base_url = ""

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.requests.append(body)
        if not self.replies:
            return 500, {"error": {"message": "no scripted reply left", "type": "server_error"}}
        message = self.replies.pop(0)
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "gpt-4o-mini"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }


@contextmanager
def serving(script: ScriptedOpenAI) -> Iterator[ScriptedOpenAI]:
    """Serve ``script`` on a free loopback port for the duration of the block; ``script.base_url`` is set."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if self.path.rstrip("/") != "/v1/chat/completions":
                status, payload = 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            else:
                status, payload = script.answer(body)
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the tests read the recorded requests instead."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    script.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
