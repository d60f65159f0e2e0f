"""``GET /api/v1/events`` on a real uvicorn server: live events, Last-Event-ID replay, reset, keep-alive, filters."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from handrail.server import create_app
from tests.server._helpers import pause
from tests.server._sse import WAIT, event_stream, frames, next_event, served
from tests.server.conftest import bearer


@pytest.fixture
def live(store: Any) -> Iterator[tuple[Any, str]]:
    app = create_app(store, keepalive=0.2)
    with served(app) as url:
        yield app, url


async def _decide(url: str, token: str, approval_id: str, decision: str = "approve") -> httpx.Response:
    async with httpx.AsyncClient(base_url=url) as client:
        return await client.post(f"/api/v1/approvals/{approval_id}/decision", json={"decision": decision},
                                 headers=bearer(token))  # fmt: skip


async def test_an_approval_created_arrives_on_the_stream(
    store: Any, live: tuple[Any, str], tokens: dict[str, str]
) -> None:
    _, url = live
    async with event_stream(url, bearer(tokens["viewer"])) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        stream = frames(response)
        await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])
        event = await next_event(stream, "approval.created")
    assert event.json["tool_name"] == "transfer" and event.json["status"] == "pending" and int(event.id or 0) > 0


async def test_a_missed_event_is_replayed_after_a_reconnect(store: Any, live: tuple[Any, str],
                                                            tokens: dict[str, str]) -> None:  # fmt: skip
    _, url = live
    headers = bearer(tokens["viewer"])
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        async with client.stream("GET", "/api/v1/events", headers=headers) as response:
            stream = frames(response)
            await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])
            created = await next_event(stream, "approval.created")
        await _decide(url, tokens["approver"], created.json["approval_id"])  # nobody is listening now
        async with client.stream(
            "GET", "/api/v1/events", headers={**headers, "Last-Event-ID": created.id or ""}
        ) as again:
            decided = await next_event(frames(again))
    assert decided.event == "approval.decided", (created, decided)
    assert decided.json["approval_id"] == created.json["approval_id"], (created, decided)
    assert int(decided.id or 0) > int(created.id or 0) and decided.json["status"] == "approved", (created, decided)


async def test_an_id_the_log_does_not_hold_gets_a_reset(live: tuple[Any, str], tokens: dict[str, str]) -> None:
    _, url = live
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        params = {"last_event_id": 10**9}
        async with client.stream("GET", "/api/v1/events", params=params, headers=bearer(tokens["viewer"])) as response:
            reset = await next_event(frames(response))
    assert reset.event == "reset" and "last_id" in reset.json


async def test_silence_brings_keep_alive_comments(live: tuple[Any, str], tokens: dict[str, str]) -> None:
    _, url = live
    async with event_stream(url, bearer(tokens["viewer"])) as response:
        stream = frames(response)

        async def comment() -> list[str]:
            async for frame in stream:
                if frame.comments:
                    return frame.comments
            return []

        assert await asyncio.wait_for(comment(), 20) == ["keep-alive"]


async def test_filters_keep_only_matching_events(store: Any, live: tuple[Any, str], tokens: dict[str, str]) -> None:
    _, url = live
    async with event_stream(url, bearer(tokens["viewer"]), tool_name="read_file") as response:
        stream = frames(response)
        await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5}), ("c2", "read_file", {"path": "a"})])
        event = await next_event(stream)
    assert event.event == "approval.created" and event.json["tool_name"] == "read_file"


async def test_the_cookie_works_for_event_source_and_a_foreign_origin_is_refused(
    live: tuple[Any, str], tokens: dict[str, str]
) -> None:
    _, url = live
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        assert (await client.post("/api/v1/login", json={"token": tokens["viewer"]})).status_code == 200
        refused = await client.get("/api/v1/events", headers={"Origin": "http://evil.example"})
        assert refused.status_code == 403
        async with client.stream("GET", "/api/v1/events", params={"last_event_id": 10**9}) as response:
            assert response.status_code == 200
            assert (await next_event(frames(response))).event == "reset"


async def test_closing_the_hub_ends_open_streams(live: tuple[Any, str], tokens: dict[str, str]) -> None:
    app, url = live
    async with event_stream(url, bearer(tokens["viewer"])) as response:
        lines = response.aiter_lines()
        assert (await lines.__anext__()).startswith("retry:")
        app.state.handrail.events.close()

        async def drain() -> None:
            async for _ in lines:
                pass

        await asyncio.wait_for(drain(), 20)


async def test_after_a_reset_for_an_id_above_the_newest_the_new_events_arrive(
    store: Any, live: tuple[Any, str], tokens: dict[str, str]
) -> None:
    _, url = live
    async with event_stream(url, {**bearer(tokens["viewer"]), "Last-Event-ID": str(10**9)}) as response:
        stream = frames(response)
        reset = await next_event(stream)
        await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])
        created = await next_event(stream, "approval.created")
    assert reset.event == "reset" and int(created.id or 0) > reset.json["last_id"]


@pytest.mark.parametrize("params", [{"status": "bogus"}, {"status": ""}, {"last_event_id": str(10**30)}])
async def test_a_stream_parameter_out_of_range_is_422_naming_it(
    client: httpx.AsyncClient, tokens: dict[str, str], params: dict[str, str]
) -> None:
    asked = client.get("/api/v1/events", params=params, headers=bearer(tokens["viewer"]))
    response = await asyncio.wait_for(asked, WAIT)  # a stream accepted would never end
    assert response.status_code == 422 and response.headers["content-type"] == "application/problem+json"
    assert [(e["parameter"], e["in"]) for e in response.json()["errors"]] == [(*params, "query")]
