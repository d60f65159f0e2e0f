"""Reading Server-Sent Events in tests, and a uvicorn server in a thread of the test process."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

WAIT = 20.0
"""How long a test awaits an event before failing (generous: the machine may be busy)."""


@dataclass
class Frame:
    """One SSE message: an event (``id``, ``event``, ``data``) or a comment."""

    id: str | None = None
    event: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.data)


async def frames(response: httpx.Response) -> AsyncIterator[Frame]:
    """The messages of an event stream, in order (a comment-only message too)."""
    frame = Frame()
    async for line in response.aiter_lines():
        if line == "":
            if frame.event or frame.data or frame.comments or frame.id:
                yield frame
            frame = Frame()
        elif line.startswith(":"):
            frame.comments.append(line[1:].strip())
        else:
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "data":
                frame.data = f"{frame.data}\n{value}" if frame.data else value
            elif key in ("id", "event"):
                setattr(frame, key, value)


async def next_event(stream: AsyncIterator[Frame], kind: str | None = None) -> Frame:
    """The next event frame (of ``kind``, if given), skipping comments and ``retry`` lines; fails after WAIT."""

    async def find() -> Frame:
        async for frame in stream:
            if frame.event is not None and (kind is None or frame.event == kind):
                return frame
        raise AssertionError("the stream ended")

    return await asyncio.wait_for(find(), WAIT)


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1 and a free port in a thread; yields the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY needs the proto
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(400):
            if server.started:
                break
            threading.Event().wait(0.025)
        assert server.started, "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        app.state.handrail.events.close()
        server.should_exit = True
        thread.join(10)
        sock.close()


@asynccontextmanager
async def event_stream(url: str, headers: dict[str, str], **params: Any) -> AsyncIterator[httpx.Response]:
    """An open ``GET /api/v1/events`` on ``url`` (its own client, closed after)."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=30) as client,
        client.stream("GET", "/api/v1/events", params=params, headers=headers) as response,
    ):
        yield response
