"""A key the model echoes, and a password in ``--openai-base-url``, are in no snapshot and no printed line.

The model is a loopback OpenAI-compatible server that puts the credentials it received (the ``Authorization``
header) into a tool call's arguments and its final text. ``approvals show`` / ``list --json`` run in a fresh
process that never read the key, so only what was stored can be printed.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from handrail.cli import main
from tests.cli.test_cli import agent_file
from tests.components.generators._echo_server import base_url, echo_server, send, send_json, serving

PASSWORD = "hunter2-" + secrets.token_hex(8)


class _EchoingModel(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        credentials = self.headers.get("authorization", "").split(" ", 1)[-1]
        if body["messages"][-1]["role"] == "tool":
            message: dict[str, Any] = {"role": "assistant", "content": f"Done with {credentials}."}
        else:
            arguments = json.dumps({"expression": f"use {credentials}"})
            call = {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": arguments}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        if body.get("stream"):  # the CLI streams: one chunk holding the whole message, then [DONE]
            for call in message.get("tool_calls") or []:
                call["index"] = 0
            choice = {"index": 0, "delta": message, "finish_reason": "stop"}
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
            send(self, 200, "text/event-stream", f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
        else:
            completion = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
                          "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}  # fmt: skip
            send_json(self, 200, completion)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def _model() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoingModel)
    with serving(server):
        yield f"127.0.0.1:{server.server_address[1]}/v1"


def _fresh(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    command = [sys.executable, "-c", "from handrail.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


def _pause(tmp_path: Path, url: str) -> tuple[str, Path]:
    snaps = tmp_path / "snaps"
    agent = agent_file(tmp_path, [], "confirmation:\n  calculator: always\n")
    paused = CliRunner().invoke(main, ["run", "--openai-base-url", url, "--pause-for-approval", str(snaps),
                                       str(agent), "what is it?"])  # fmt: skip
    assert paused.exit_code == 4, paused.output
    assert "use ***" in paused.output
    listed = _fresh("approvals", "list", "--dir", str(snaps), "--json", cwd=tmp_path)
    snapshot_id = json.loads(listed.stdout)["pending"][0]["snapshot_id"]
    shown = _fresh("approvals", "show", snapshot_id, "--dir", str(snaps), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "use ***" in shown.stdout
    return paused.output + listed.stdout + listed.stderr + shown.stdout + shown.stderr, snaps


def _stored(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_a_key_the_model_echoes_in_call_arguments_is_stored_and_shown_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-proj-ARGKEY-" + secrets.token_urlsafe(24)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with _model() as address:
        printed, snaps = _pause(tmp_path, f"http://{address}")
    assert key not in printed and key[:16] not in printed
    assert key.encode() not in _stored(snaps) and key[:16].encode() not in _stored(snaps)


def test_a_password_in_the_base_url_is_neither_stored_nor_printed(tmp_path: Path) -> None:
    with _model() as address:
        printed, snaps = _pause(tmp_path, f"http://bob:{PASSWORD}@{address}")
    assert PASSWORD not in printed and PASSWORD.encode() not in _stored(snaps)
    assert b"Ym9i" not in _stored(snaps)  # the Basic credentials the HTTP client made of it, echoed by the model


def test_an_error_names_the_base_url_without_its_password(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    agent = str(agent_file(tmp_path, []))
    unreachable = CliRunner().invoke(main, ["run", "--openai-base-url", f"http://bob:{PASSWORD}@127.0.0.1:{closed}/v1",
                                            "--approve", "all", agent, "hello"])  # fmt: skip
    assert f"Cannot reach the OpenAI-compatible server at http://bob@127.0.0.1:{closed}/v1" in unreachable.output
    with echo_server() as server:  # answers 401 echoing the credentials it received
        url = base_url(server).replace("http://", f"http://bob:{PASSWORD}@")
        refused = _fresh("run", "--openai-base-url", url, "--approve", "all", agent, "hello", cwd=tmp_path)
    assert "answered HTTP 401: Incorrect API key provided: Basic ***." in refused.stdout + refused.stderr
    assert "http://bob@127.0.0.1:" in refused.stdout + refused.stderr
    for text in (unreachable.output, refused.stdout, refused.stderr):
        assert PASSWORD not in text and "Ym9i" not in text
