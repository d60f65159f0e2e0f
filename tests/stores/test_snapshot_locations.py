from __future__ import annotations

from pathlib import Path

import pytest

from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.stores._snapshot_locations import open_snapshot_store, store_for_location
from handrail.stores.snapshot_file import FileSnapshotStore
from handrail.stores.snapshot_postgres import PostgresSnapshotStore
from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore
from handrail.testing.store_suites.snapshots import make_paused_snapshot


def test_a_directory_opens_a_file_store(tmp_path: Path) -> None:
    store = open_snapshot_store(tmp_path / "approvals", allowed_modules=["myapp"], lock_timeout=1)
    assert isinstance(store, FileSnapshotStore)
    assert (store.directory, store.allowed_modules, store.lock_timeout) == (tmp_path / "approvals", ("myapp",), 1.0)


def test_sqlite_urls_take_the_path_after_three_slashes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    relative = open_snapshot_store("sqlite:///runs/handrail.db")
    assert isinstance(relative, SQLiteSnapshotStore) and relative.path == str(tmp_path / "runs" / "handrail.db")
    absolute = open_snapshot_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(absolute, SQLiteSnapshotStore) and absolute.path == str(tmp_path / "abs.db")


@pytest.mark.parametrize("url", ["postgresql://ann@db.example:5432/app", "postgres://db.example/app"])
def test_postgres_urls_open_a_postgres_store_lazily(url: str) -> None:
    store = open_snapshot_store(url)  # nothing is connected yet
    assert isinstance(store, PostgresSnapshotStore)
    assert store.locator("s1").endswith("#s1") and store.locator("s1").startswith("postgresql://")


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [
        ("", ConfigurationError, "directory or a URL"),
        ("sqlite://", ConfigurationError, "sqlite:///<path>"),
        ("sqlite:///", ConfigurationError, "sqlite:///<path>"),
        ("ftp://host/x", ConfigurationError, "Unknown snapshot store"),
        (42, ConfigurationTypeError, "str or path"),
    ],
)
def test_bad_store_names(value: object, error: type[Exception], fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        open_snapshot_store(value)  # type: ignore[arg-type]


def test_store_for_location_of_a_file(tmp_path: Path) -> None:
    saved = FileSnapshotStore(tmp_path)
    snapshot_id = saved.save(make_paused_snapshot())
    store, found = store_for_location(saved.locator(snapshot_id))
    assert isinstance(store, FileSnapshotStore) and store.directory == tmp_path and found == snapshot_id


def test_store_for_location_of_a_sqlite_row(tmp_path: Path) -> None:
    saved = SQLiteSnapshotStore(tmp_path / "x.db")
    snapshot_id = saved.save(make_paused_snapshot())
    store, found = store_for_location(saved.locator(snapshot_id), allowed_modules=["myapp"])
    assert isinstance(store, SQLiteSnapshotStore) and store.path == saved.path and found == snapshot_id
    assert store.allowed_modules == ("myapp",)
    assert store.load(found) == saved.load(snapshot_id)
    saved.close()
    store.close()


def test_store_for_location_of_a_postgres_row() -> None:
    store, found = store_for_location("postgresql://ann@db.example:5432/app#payer_tool_invoker_0_x")
    assert isinstance(store, PostgresSnapshotStore) and found == "payer_tool_invoker_0_x"
    assert store.locator(found) == "postgresql://ann@db.example:5432/app#payer_tool_invoker_0_x"


@pytest.mark.parametrize("location", ["sqlite:////tmp/x.db", "postgresql://h/db#", "postgresql://h/db#a/b"])
def test_a_database_location_needs_a_valid_id(location: str) -> None:
    with pytest.raises(ConfigurationError):
        store_for_location(location)


def test_a_libpq_key_value_string_names_a_postgres_server_not_a_folder() -> None:
    from handrail.stores import PostgresSnapshotStore, open_snapshot_store

    store = open_snapshot_store("host=127.0.0.1 port=1 dbname=x user=postgres")
    assert isinstance(store, PostgresSnapshotStore)
