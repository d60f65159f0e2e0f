"""OpenAIChatGenerator's async client and event loops: one client per loop, closed when its loop shuts down."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core.secret import Secret
from handrail.dataclasses import ChatMessage
from tests.components.generators._echo_server import send_json, serving

ANSWER = {"id": "x", "object": "chat.completion", "created": 1, "model": "m",
          "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client holds an open connection after the call

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        send_json(self, 200, ANSWER)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    with serving(server):
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def _generator(url: str) -> OpenAIChatGenerator:
    return OpenAIChatGenerator(api_key=Secret.from_token("none"), api_base_url=url, model="m", max_retries=0)


def test_a_generator_used_in_a_finished_event_loop_leaves_no_close_for_a_later_loop(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK's client, left open when its loop ended, closed itself when collected by scheduling the close on
    # the loop running then: "Task exception was never retrieved ... RuntimeError: Event loop is closed".
    first = _generator(url)
    assert asyncio.run(first.run_async([ChatMessage.from_user("q")]))["replies"][0].text == "hi"
    second = _generator(url)

    async def later() -> str | None:
        nonlocal first
        del first
        gc.collect()
        text = (await second.run_async([ChatMessage.from_user("q")]))["replies"][0].text
        await asyncio.sleep(0.05)  # a close scheduled on this loop would run (and fail) now
        return text

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert asyncio.run(later()) == "hi"
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


def test_each_event_loop_gets_its_own_client_and_a_loop_reuses_it(url: str) -> None:
    gen = _generator(url)

    async def twice() -> None:
        await gen.run_async([ChatMessage.from_user("q")])
        await gen.run_async([ChatMessage.from_user("q")])

    asyncio.run(twice())
    asyncio.run(twice())
    assert gen.run([ChatMessage.from_user("q")])["replies"][0].text == "hi"  # the sync client is apart
