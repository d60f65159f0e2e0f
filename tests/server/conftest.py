"""Fixtures of the service tests: a store of each kind (PostgreSQL under the ``postgres`` marker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.stores import FileSnapshotStore, SQLiteSnapshotStore, open_snapshot_store
from tests.server import _agents
from tests.server._workers import Workers
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store's URL (a directory, a SQLite file, a PostgreSQL database), as ``handrail worker --store`` takes it."""
    if request.param == "directory":
        return str(tmp_path / "store")
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
def store(store_url: str) -> Iterator[Any]:
    """The store of ``store_url``, opened in this process."""
    opened: Any = open_snapshot_store(store_url)
    yield opened
    opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteSnapshotStore]:
    made = SQLiteSnapshotStore(tmp_path / "one.db")
    yield made
    made.close()


@pytest.fixture
def file_store(tmp_path: Path) -> FileSnapshotStore:
    return FileSnapshotStore(tmp_path / "files")


@pytest.fixture(autouse=True)
def _sent() -> None:
    _agents.SENT.clear()


@pytest.fixture
def workers(store_url: str, tmp_path: Path) -> Iterator[Workers]:
    made = Workers.in_folder(store_url, tmp_path)
    yield made
    made.close()
