"""Fixtures of the resumer and run tests (imported by conftest.py): a store of each kind, workers.

``any_store`` is a directory, a SQLite file or a PostgreSQL database (under the ``postgres`` marker); the test
modules that run on all three alias it as their own ``store`` fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.stores import SQLiteSnapshotStore, open_snapshot_store
from tests.server import _agents
from tests.server._workers import Workers


@pytest.fixture(params=["directory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def service_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store's URL (a directory, a SQLite file, a PostgreSQL database), as ``handrail worker --store`` takes it."""
    if request.param == "directory":
        return str(tmp_path / "store")
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("postgres_dsn"))


@pytest.fixture
def any_store(service_store_url: str) -> Iterator[Any]:
    """The store of ``service_store_url``, opened in this process."""
    opened: Any = open_snapshot_store(service_store_url)
    yield opened
    opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteSnapshotStore]:
    made = SQLiteSnapshotStore(tmp_path / "one.db")
    yield made
    made.close()


@pytest.fixture(autouse=True)
def _nothing_sent() -> None:
    _agents.SENT.clear()


@pytest.fixture
def workers(service_store_url: str, tmp_path: Path) -> Iterator[Workers]:
    made = Workers.in_folder(service_store_url, tmp_path)
    yield made
    made.close()
