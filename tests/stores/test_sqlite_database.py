"""The SQLite plumbing under the embedded stores: first use of a new file by many threads at once."""

from __future__ import annotations

import threading
from pathlib import Path

from handrail.stores._sqlite import SQLiteDatabase


def test_many_threads_opening_a_new_file_at_once_all_get_a_connection(tmp_path: Path) -> None:
    """The WAL switch of a brand-new file is retried instead of failing with 'database is locked'."""
    for trial in range(40):
        db = SQLiteDatabase(tmp_path / f"new-{trial}.db", store="t", migrations=["CREATE TABLE a (x INTEGER);"])
        barrier = threading.Barrier(8)
        errors: list[BaseException] = []

        def open_it(
            db: SQLiteDatabase = db, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors
        ) -> None:
            try:
                barrier.wait()
                db.connection().execute("INSERT INTO a VALUES (1)")
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=open_it) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"trial {trial}: {errors[0]!r}"
        assert db.connection().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.connection().execute("SELECT count(*) FROM a").fetchone()[0] == 8


def test_a_new_database_file_and_its_wal_files_are_private(tmp_path: Path) -> None:
    import os
    import stat

    path = tmp_path / "private.db"
    db = SQLiteDatabase(path, store="t", migrations=["CREATE TABLE a (x INTEGER);"])
    db.connection().execute("INSERT INTO a VALUES (1)")
    for name in ("private.db", "private.db-wal", "private.db-shm"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name
    db.close()


def test_an_existing_database_file_keeps_its_mode(tmp_path: Path) -> None:
    import os
    import stat

    path = tmp_path / "shared.db"
    path.touch(mode=0o640)
    os.chmod(path, 0o640)
    SQLiteDatabase(path, store="t", migrations=[]).connection()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
