"""Fixtures of the HTTP API tests: a store (SQLite, PostgreSQL with the ``postgres`` marker), tokens, the app.

Most tests talk to the ASGI app in-process through httpx (``client``); tests/server/test_http_server.py starts
real ``handrail serve`` processes on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from handrail.stores import SQLiteSnapshotStore, open_snapshot_store
from tests.server._resumer_fixtures import _nothing_sent, any_store, service_store_url, sqlite_store, workers  # noqa: F401
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures

BASE = "http://localhost"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        made: Any = SQLiteSnapshotStore(tmp_path / "service.db")
    else:
        made = open_snapshot_store(request.getfixturevalue("postgres_dsn"))
    yield made
    made.close()


@pytest.fixture
def tokens(store: Any) -> dict[str, str]:
    """A token per kind of principal: viewer, approver (every tool), reader (approver of read_* only), admin."""
    now = datetime.now(UTC)
    made = {
        "viewer": store.add_token("vera", "viewer", at=now)[1],
        "approver": store.add_token("ann", "approver", at=now)[1],
        "other": store.add_token("bob", "approver", at=now)[1],
        "reader": store.add_token("rita", "approver", tools=("read_*",), at=now)[1],
        "admin": store.add_token("ada", "admin", at=now)[1],
    }
    return made


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def client_for(app: Any, base_url: str = BASE) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    return httpx.AsyncClient(transport=transport, base_url=base_url)


@pytest.fixture
def app(store: Any) -> Any:
    from handrail.server import create_app

    return create_app(store)


@pytest.fixture
async def client(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(app) as made:
        yield made
