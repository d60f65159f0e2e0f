"""Real ``handrail serve`` processes on 127.0.0.1: tokens from the CLI, events across processes, shutdown."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.stores import SQLiteSnapshotStore, open_snapshot_store
from tests.server._helpers import pause
from tests.server._processes import ServeProcess, serving
from tests.server._sse import event_stream, frames, next_event
from tests.server.conftest import bearer


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], ServeProcess]]:
    """One server for the session, on an SQLite store with an admin and a viewer token."""
    path = tmp_path_factory.mktemp("served") / "service.db"
    store = SQLiteSnapshotStore(path)
    made = {role: store.add_token(f"{role}-1", role, at=datetime.now(UTC))[1] for role in ("admin", "viewer")}
    store.close()
    url = f"sqlite:///{path}"
    with serving(url, "--keepalive", "0.5") as server:
        yield url, made, server


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'service.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


def test_a_served_api_knows_the_stores_tokens(shared: tuple[str, dict[str, str], ServeProcess]) -> None:
    _, made, server = shared
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{server.url}/api/v1/me", headers=bearer(made["viewer"])).json()["role"] == "viewer"
    assert httpx.get(f"{server.url}/api/v1/me").status_code == 401
    refused = httpx.get(f"{server.url}/api/v1/me", headers={**bearer(made["viewer"]), "Host": "rebind.example"})
    assert refused.status_code == 421
    assert "server" not in {k.lower() for k in httpx.get(f"{server.url}/healthz").headers}


def test_a_crash_in_a_served_request_shows_no_traceback(shared: tuple[str, dict[str, str], ServeProcess]) -> None:
    _, made, server = shared
    response = httpx.get(f"{server.url}/api/v1/approvals/{'x' * 2000}", headers=bearer(made["viewer"]))
    assert response.headers["content-type"] == "application/problem+json" and "Traceback" not in response.text


async def test_events_from_other_processes_reach_the_stream(store_url: str) -> None:
    store: Any = open_snapshot_store(store_url)
    _, admin = store.add_token("ada", "admin", at=datetime.now(UTC))
    with serving(store_url, "--keepalive", "0.5") as watched, serving(store_url) as other:
        async with event_stream(watched.url, bearer(admin)) as response:
            stream = frames(response)
            await asyncio.to_thread(pause, store, [("c1", "transfer", {"amount": 5})])  # this test's process
            created = await next_event(stream, "approval.created")
            async with httpx.AsyncClient(base_url=other.url, timeout=30) as second:
                decided = await second.post(
                    f"/api/v1/approvals/{created.json['approval_id']}/decision",
                    json={"decision": "approve"},
                    headers=bearer(admin),
                )
            assert decided.status_code == 200
            event = await next_event(stream, "approval.decided")
    assert event.json["approval_id"] == created.json["approval_id"] and event.json["decided_by"] == "ada"
    store.close()


async def test_sigterm_stops_a_server_with_an_open_event_stream(store_url: str) -> None:
    store: Any = open_snapshot_store(store_url)
    _, viewer = store.add_token("vera", "viewer", at=datetime.now(UTC))
    store.close()
    with serving(store_url) as server:
        async with event_stream(server.url, bearer(viewer)) as response:
            lines = response.aiter_lines()
            assert (await lines.__anext__()).startswith("retry:")
            code = await asyncio.to_thread(server.stop, signal.SIGTERM, 30.0)

            async def drain() -> None:
                async for _ in lines:
                    pass

            await asyncio.wait_for(drain(), 30)
    assert code in (0, -signal.SIGTERM)  # uvicorn re-raises the signal once it has shut down
