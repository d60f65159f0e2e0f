"""A recorded OpenAI-compatible server for the generator tests, served through an httpx MockTransport.

No network and no patching of SDK internals: the SDK gets an ``httpx.Client`` /
``httpx.AsyncClient`` whose ``MockTransport`` serves recorded responses (fixtures/openai/) or
hand-made ones in order and records the requests, so tests can assert what the server received.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from handrail.components.generators.chat import OpenAIChatGenerator
from handrail.core import Secret

FIXTURES = Path(__file__).parent / "fixtures" / "openai"
BASE_URL = "http://llm.test:8000/v1"


class ChunkedBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body delivered in small pieces, as a real network delivers a stream."""

    def __init__(self, data: bytes, size: int = 53) -> None:
        self.pieces = [data[i : i + size] for i in range(0, len(data), size)]

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


Responder = Callable[[httpx.Request], httpx.Response]


def recorded(name: str, status: int = 200, headers: dict[str, str] | None = None) -> Responder:
    """A response factory for a fixture file (JSON body, or an SSE stream for ``.sse``)."""
    data = (FIXTURES / name).read_bytes()

    def make(request: httpx.Request) -> httpx.Response:
        if name.endswith(".sse"):
            return httpx.Response(status, headers={"content-type": "text/event-stream"}, stream=ChunkedBody(data))
        return httpx.Response(status, headers={"content-type": "application/json", **(headers or {})}, content=data)

    return make


def failing(exc_type: type[httpx.TransportError], message: str) -> Responder:
    """A responder that fails like a network does (no response at all)."""

    def fail(request: httpx.Request) -> httpx.Response:
        raise exc_type(message, request=request)

    return fail


class RecordedServer:
    """Serves recorded responses in order and records every request it receives."""

    def __init__(self, *items: Responder) -> None:
        self.items = list(items)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert self.items, f"unexpected request #{len(self.requests)} to {request.url}"
        return self.items.pop(0)(request)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def generator(self, **kwargs: Any) -> OpenAIChatGenerator:
        kwargs.setdefault("api_key", Secret.from_token("sk-test-123"))
        kwargs.setdefault("api_base_url", BASE_URL)
        kwargs.setdefault("model", "gpt-4o-mini")
        transport = httpx.MockTransport(self)
        return OpenAIChatGenerator(
            http_client=httpx.Client(transport=transport),
            async_http_client=httpx.AsyncClient(transport=transport),
            **kwargs,
        )


class DroppedBody(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A stream whose connection drops after the first ``keep`` bytes."""

    def __init__(self, data: bytes, keep: int = 700) -> None:
        self.data = data
        self.keep = keep

    def __iter__(self) -> Iterator[bytes]:
        yield self.data[: self.keep]
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.data[: self.keep]
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
