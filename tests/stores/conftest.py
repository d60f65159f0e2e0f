"""Fixtures shared by the store tests.

PostgreSQL tests carry the ``postgres`` marker and take ``postgres_dsn``. The server comes from
``HANDRAIL_TEST_POSTGRES_DSN`` (e.g. ``postgresql://postgres@127.0.0.1:55432/postgres``); when it is not set the
fixture FAILS rather than skips, so CI cannot pass without running them. The tests get a fresh database,
``handrail_test_<random>``, created once per test session and dropped (with its open connections) at the end;
before each test every ``handrail_*`` table in it except ``handrail_schema`` is truncated.

Fixtures:
    postgres_server_dsn (session): the DSN from the environment (a maintenance database on the server).
    postgres_database (session): the DSN of the fresh test database.
    postgres_dsn: the test database's DSN, its handrail tables emptied before the test.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

POSTGRES_DSN_ENV = "HANDRAIL_TEST_POSTGRES_DSN"


@pytest.fixture(scope="session")
def postgres_server_dsn() -> str:
    dsn = os.environ.get(POSTGRES_DSN_ENV)
    if not dsn:
        pytest.fail(
            f"{POSTGRES_DSN_ENV} is not set: PostgreSQL store tests need a server, e.g. "
            f"{POSTGRES_DSN_ENV}=postgresql://postgres@127.0.0.1:5432/postgres (or deselect them: -m 'not postgres')."
        )
    return dsn


@pytest.fixture(scope="session")
def postgres_database(postgres_server_dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    name = f"handrail_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(postgres_server_dsn, dbname=name)
    finally:
        with psycopg.connect(postgres_server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def postgres_dsn(postgres_database: str) -> str:
    import psycopg
    from psycopg import sql

    with psycopg.connect(postgres_database, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename LIKE 'handrail\\_%' AND tablename <> 'handrail_schema'"
        ).fetchall()
        if rows:
            tables = sql.SQL(", ").join(sql.Identifier(row[0]) for row in rows)
            _truncate(conn, sql.SQL("TRUNCATE {} CASCADE").format(tables))
    return postgres_database


def _truncate(conn: Any, statement: Any) -> None:
    """TRUNCATE, again after a deadlock: a previous test's server may still be closing its connections (a pool
    returning a connection, a listener ending), and TRUNCATE's exclusive locks can meet their last write."""
    import time

    import psycopg

    for attempt in range(5):
        try:
            conn.execute(statement)
            return
        except psycopg.errors.DeadlockDetected:
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
