"""An open event stream ends once its credentials end: a revoked token, a session cookie of one, an expired cookie.

No event written after the revocation reaches such a stream; a stream of another principal goes on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from handrail.server import create_app
from tests.server._helpers import pause
from tests.server._sse import WAIT, Frame, event_stream, frames, next_event, served
from tests.server.conftest import bearer


@pytest.fixture
def now() -> list[datetime]:
    """The app's clock: a test moves it on."""
    return [datetime.now(UTC)]


@pytest.fixture
def live(store: Any, now: list[datetime]) -> Iterator[str]:
    app = create_app(store, keepalive=0.2, clock=lambda: now[0], session_ttl=timedelta(minutes=5))
    with served(app) as url:
        yield url


@asynccontextmanager
async def _opened(url: str, token: str, via: str) -> AsyncIterator[httpx.Response]:
    """An open stream with ``token`` as a bearer header or a session cookie made from it (subscribed: the stream
    subscribes before it sends its headers)."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        headers = bearer(token)
        if via == "cookie":
            assert (await client.post("/api/v1/login", json={"token": token})).status_code == 200
            headers = {}
        async with client.stream("GET", "/api/v1/events", headers=headers) as response:
            assert response.status_code == 200
            yield response


async def _rest(response: httpx.Response) -> list[Frame]:
    """Every frame until the stream ends (fails when it does not end within WAIT)."""

    async def drain() -> list[Frame]:
        return [frame async for frame in frames(response)]

    return await asyncio.wait_for(drain(), WAIT)


@pytest.mark.parametrize("via", ["bearer", "cookie"])
async def test_a_revoked_token_s_open_stream_gets_no_event_and_ends(
    store: Any, live: str, tokens: dict[str, str], via: str
) -> None:
    async with (
        _opened(live, tokens["viewer"], via) as doomed,
        event_stream(live, bearer(tokens["admin"])) as other,
    ):
        witness = frames(other)
        store.revoke_token("vera", at=datetime.now(UTC))
        await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])
        assert (await next_event(witness, "approval.created")).json["tool_name"] == "transfer"
        after = await _rest(doomed)
    assert [f.event for f in after if f.event is not None] == []


async def test_an_expired_session_cookie_s_open_stream_ends(
    store: Any, live: str, now: list[datetime], tokens: dict[str, str]
) -> None:
    async with _opened(live, tokens["viewer"], "cookie") as stream:
        now[0] += timedelta(minutes=6)
        await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])
        after = await _rest(stream)
    assert [f.event for f in after if f.event is not None] == []
