"""Open a snapshot store from a URL or directory, and find the store a snapshot's ``location`` points at.

=========================================  ==========================================
``open_snapshot_store(...)`` argument       store
=========================================  ==========================================
``approvals/`` (any path, no scheme)        ``FileSnapshotStore("approvals/")``
``sqlite:///relative.db``                   ``SQLiteSnapshotStore("relative.db")``
``sqlite:////abs/path.db``                  ``SQLiteSnapshotStore("/abs/path.db")``
``postgresql://...`` / ``postgres://...``   ``PostgresSnapshotStore(dsn)``
=========================================  ==========================================

A ``location`` (see ``SnapshotStore.locator``) is a snapshot file's absolute path, or such a URL followed by
``#<snapshot id>``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.stores._snapshot_base import SnapshotStoreBase
from handrail.stores._snapshot_common import check_snapshot_id

__all__ = ["names_a_database", "open_snapshot_store", "store_for_location"]

_POSTGRES = ("postgresql://", "postgres://")
_SQLITE = "sqlite:///"
_CONNINFO = re.compile(r"^\s*(host|hostaddr|dbname|user|port|service)\s*=")  # a libpq key=value string


def open_snapshot_store(
    url_or_dir: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), lock_timeout: float = 5.0
) -> SnapshotStoreBase:
    """The snapshot store a CLI ``--store`` value or a directory names.

    Args:
        url_or_dir: A directory path, ``sqlite:///<path>`` (three slashes, then the path: four for an absolute
            one), or a ``postgresql://`` / ``postgres://`` URL (the password, if any, is better left to
            ``PGPASSWORD`` / ``~/.pgpass``).
        allowed_modules: Module prefixes whose classes state values in the records may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere.

    Returns:
        A FileSnapshotStore, SQLiteSnapshotStore or PostgresSnapshotStore (nothing is opened yet).

    Raises:
        ConfigurationTypeError: ``url_or_dir`` is not a str or path.
        ConfigurationError: An empty value, ``sqlite://`` without a path, or an unknown ``scheme://``.
    """
    if not isinstance(url_or_dir, str | os.PathLike):
        raise ConfigurationTypeError(f"A snapshot store is named by a str or path, got {type(url_or_dir).__name__}.")
    text = os.fspath(url_or_dir)
    if not text:
        raise ConfigurationError("A snapshot store needs a directory or a URL, got ''.")
    options = {"allowed_modules": allowed_modules, "lock_timeout": lock_timeout}
    if text.startswith(_POSTGRES) or _CONNINFO.match(text):
        from handrail.stores.snapshot_postgres import PostgresSnapshotStore

        return PostgresSnapshotStore(text, **options)  # type: ignore[arg-type]
    if text.startswith("sqlite:"):
        path = text[len(_SQLITE) :] if text.startswith(_SQLITE) else ""
        if not path:
            raise ConfigurationError(
                f"A SQLite snapshot store is named sqlite:///<path> (sqlite:////abs/path.db for an absolute path), "
                f"got {text!r}."
            )
        from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore

        return SQLiteSnapshotStore(path, **options)  # type: ignore[arg-type]
    if "://" in text:
        raise ConfigurationError(
            f"Unknown snapshot store {text!r}: give a directory, sqlite:///<path> or postgresql://..."
        )
    from handrail.stores.snapshot_file import FileSnapshotStore

    return FileSnapshotStore(text, **options)  # type: ignore[arg-type]


def store_for_location(
    location: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), lock_timeout: float = 5.0
) -> tuple[SnapshotStoreBase, str]:
    """The store and snapshot id an ``AgentSnapshot.location`` points at.

    Args:
        location: A snapshot file's path (``/abs/dir/<id>.json``), or ``<store URL>#<id>`` as
            ``SQLiteSnapshotStore.locator`` / ``PostgresSnapshotStore.locator`` write it.
        allowed_modules: See :func:`open_snapshot_store`.
        lock_timeout: See :func:`open_snapshot_store`.

    Returns:
        ``(store, snapshot_id)``; the snapshot need not exist.

    Raises:
        ConfigurationError: A URL without ``#<id>``, or an invalid id.
    """
    text = os.fspath(location)
    if not isinstance(text, str):
        raise ConfigurationTypeError(f"A snapshot location is a str, got {type(text).__name__}.")
    if "://" in text:
        url, hash_sign, snapshot_id = text.rpartition("#")
        if not hash_sign or not url:
            raise ConfigurationError(f"Snapshot location {text!r} names a database but no snapshot (#<id>).")
        return open_snapshot_store(url, allowed_modules=allowed_modules, lock_timeout=lock_timeout), check_snapshot_id(
            snapshot_id
        )
    path = Path(text).absolute()
    store = open_snapshot_store(str(path.parent), allowed_modules=allowed_modules, lock_timeout=lock_timeout)
    return store, check_snapshot_id(path.name.removesuffix(".json"))


def names_a_database(value: str) -> bool:
    """Whether ``value`` names a database store rather than a directory.

    A database is named by ``scheme://...``, ``sqlite:...`` or a libpq ``key=value`` string.
    """
    return "://" in value or value.startswith("sqlite:") or bool(_CONNINFO.match(value))
