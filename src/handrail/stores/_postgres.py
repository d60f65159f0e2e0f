"""PostgreSQL plumbing shared by the stores: the DSN, a psycopg 3 connection pool, transactions, migrations.

The pool is shared by every store object of the process with the same DSN and pool settings, and so is the one
connection holding their claims (:mod:`handrail.stores._postgres_shared`): at most ``max_size + 1``
connections per process and DSN.

Each store keeps its own schema version in the table ``handrail_schema``; migrations run once, under an
advisory lock, so several processes starting together do not race.

A store takes its DSN as a string or a :class:`~handrail.core.secret.Secret`; :func:`resolve_dsn` checks it
once for every store, :meth:`PostgresDatabase.init_parameters` writes it (never a password) and
:func:`read_dsn_parameter` reads it back. :func:`redact_dsn` (error messages) and :func:`dsn_without_password`
(snapshot locators) find the password the way libpq does: a URL's ``user:password@`` (before the first ``/``),
its ``password`` / ``sslpassword`` query parameters, or those keywords of a ``key=value`` string.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from handrail.core._urls import url_without_password
from handrail.core.secret import Secret, deserialize_secret
from handrail.core.serialization import init_parameters
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError, StoreError
from handrail.stores._postgres_shared import SharedConnections, acquire, release
from handrail.stores._schema_version import check_version, damaged_without_version, tables_created_by

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_SCHEMA_TABLE = "CREATE TABLE IF NOT EXISTS handrail_schema (store TEXT PRIMARY KEY, version INTEGER NOT NULL)"

__all__ = [
    "PostgresDatabase",
    "PostgresStore",
    "dsn_without_password",
    "read_dsn_parameter",
    "redact_dsn",
    "resolve_dsn",
]

_MIGRATION_LOCK = 0x68616E64  # "hand": the advisory lock key held while a store's schema is brought up to date

_URL = re.compile(r"^postgres(?:ql)?://")
_URL_PASSWORD = re.compile(r"^(postgres(?:ql)?://[^:/@]*):[^/@]*@")
_QUERY_PASSWORD = re.compile(r"([?&])((?:ssl)?password)=[^&#]*(&?)")
_KEYWORD = re.compile(r"(\w+)(\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)")
_SECRET_KEYWORDS = ("password", "sslpassword")


def redact_dsn(dsn: str) -> str:
    """The DSN with any password replaced by ``***`` (for error messages).

    Examples:
        >>> redact_dsn("postgresql://ann:s3cret@db:5432/app?sslmode=require")
        'postgresql://ann:***@db:5432/app?sslmode=require'
        >>> redact_dsn("host=db password='s 3' dbname=app")
        'host=db password=*** dbname=app'
    """
    if _URL.match(dsn):
        return _QUERY_PASSWORD.sub(r"\1\2=***\3", _URL_PASSWORD.sub(r"\1:***@", dsn))
    return _KEYWORD.sub(lambda m: f"{m[1]}{m[2]}***" if m[1] in _SECRET_KEYWORDS else m[0], dsn)


def dsn_without_password(dsn: str) -> str:
    """The DSN as a ``postgresql://`` URL without any password.

    Connecting with it again takes the password from ``PGPASSWORD`` or ``~/.pgpass``.

    Args:
        dsn: A libpq URL (``postgresql://user:pw@host:5432/db?sslmode=require``) or key/value string
            (``host=... dbname=... password=...``).

    Returns:
        E.g. ``postgresql://user@host:5432/db?sslmode=require``; a key/value string becomes
        ``postgresql://?host=...&dbname=...``.

    Examples:
        >>> dsn_without_password("postgresql://ann:s3cret@db.example:5432/app?password=x&sslmode=require")
        'postgresql://ann@db.example:5432/app?sslmode=require'
        >>> dsn_without_password("host=db dbname=app password=x")
        'postgresql://?host=db&dbname=app'
    """
    if _URL.match(dsn):
        return "postgresql://" + url_without_password(dsn).split("://", 1)[1]
    kept = [(key, value.strip("'")) for key, _, value in _KEYWORD.findall(dsn) if key not in _SECRET_KEYWORDS]
    return "postgresql://?" + urlencode(kept)


def resolve_dsn(dsn: object, store: str) -> str:
    """The connection string a store's ``dsn`` argument stands for.

    Args:
        dsn: A libpq URL or key/value string, or a Secret that resolves to one.
        store: The store's name, for errors.

    Raises:
        ConfigurationTypeError: ``dsn`` is neither a str nor a Secret.
        ConfigurationError: The DSN is empty, or the Secret's variable is not set.
    """
    if not isinstance(dsn, str | Secret):
        raise ConfigurationTypeError(f"dsn must be a non-empty str or a Secret, got {type(dsn).__name__}.")
    if isinstance(dsn, str):
        resolved: str | None = dsn
    else:
        resolved = dsn.resolve_value()
    if not resolved:
        what = "the DSN secret resolved to nothing" if isinstance(dsn, Secret) else "the DSN is empty"
        raise ConfigurationError(f"{store}: {what}.")
    return resolved


def read_dsn_parameter(params: dict[str, Any]) -> dict[str, Any]:
    """``init_parameters`` written by :meth:`PostgresDatabase.init_parameters`, with a Secret DSN rebuilt (in place).

    Raises:
        SerializationError: The secret's data is malformed.
    """
    if isinstance(params.get("dsn"), dict):
        params["dsn"] = deserialize_secret(params["dsn"])
    return params


def _check_pool(store: str, min_size: Any, max_size: Any, timeout: Any) -> tuple[int, int, Any]:
    """The pool settings, checked.

    Raises:
        ConfigurationError: Not ``0 <= min_size <= max_size``, ``max_size >= 1`` (ints) and ``timeout > 0``.
    """
    ints = all(type(v) is int for v in (min_size, max_size))
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if not (ints and number and 0 <= min_size <= max_size and max_size >= 1 and timeout > 0):
        raise ConfigurationError(
            f"{store}: the pool needs ints 0 <= min_size <= max_size with max_size >= 1, and timeout > 0 seconds; "
            f"got min_size={min_size!r}, max_size={max_size!r}, timeout={timeout!r}."
        )
    return min_size, max_size, timeout


class PostgresDatabase:
    """A PostgreSQL database used by one store, through a connection pool opened on first use.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user@host:5432/db``), or a Secret holding one.
        store: The store's name, used in errors and as its key in ``handrail_schema``.
        migrations: SQL scripts; script ``i`` brings the schema from version ``i`` to ``i + 1``.
        min_size: Connections kept open.
        max_size: At most this many pooled connections (shared with the process's other stores of the same DSN
            and pool settings).
        timeout: Seconds to wait for a connection before failing.

    Raises:
        ConfigurationTypeError: ``dsn`` is neither a str nor a Secret.
        ConfigurationError: The DSN is empty, its Secret's variable is not set, psycopg (the ``postgres``
            extra) is not installed, or the pool settings are not ``0 <= min_size <= max_size``, ``max_size >= 1``
            and ``timeout > 0``.
        StoreError (on first use): The server is unreachable, holds a newer schema version of this store, or is
            damaged: the version row holds no version number, or is missing while the store's tables exist.
    """

    def __init__(
        self,
        dsn: str | Secret,
        *,
        store: str,
        migrations: Sequence[str],
        min_size: int = 1,
        max_size: int = 4,
        timeout: float = 10.0,
    ) -> None:
        self.dsn = resolve_dsn(dsn, store)
        """The connection string (a Secret resolved)."""
        self.given_dsn = dsn
        """The DSN as the store was given it."""
        try:
            import psycopg  # noqa: F401
            import psycopg_pool  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError(
                f"{store} needs psycopg 3 and psycopg-pool: pip install 'handrail[postgres]' ({exc})."
            ) from exc
        self.store = store
        self.migrations = tuple(migrations)
        self.min_size, self.max_size, self.timeout = _check_pool(store, min_size, max_size, timeout)
        self._shared: SharedConnections | None = None
        self._migrated = False
        self._lock = threading.Lock()

    def init_parameters(self, **options: Any) -> dict[str, Any]:
        """A store's ``init_parameters``: the DSN, then ``options``, then the pool options.

        A Secret DSN is written as its variable names (:func:`read_dsn_parameter` reads it back), a string as is.

        Raises:
            SerializationError: The DSN is a string holding a password, or a token Secret: it would be written in
                plain text.
        """
        if isinstance(self.given_dsn, Secret):
            dsn: Any = self.given_dsn.to_dict()
        elif redact_dsn(self.dsn) != self.dsn:
            raise SerializationError(
                f"{self.store}: the DSN {redact_dsn(self.dsn)} holds a password, which would be written in plain "
                "text. Pass dsn=Secret.from_env_var('NAME') so only the variable name is written."
            )
        else:
            dsn = self.dsn
        return {"dsn": dsn, **options, "min_size": self.min_size, "max_size": self.max_size, "timeout": self.timeout}

    def _where(self) -> str:
        return f"PostgreSQL at {redact_dsn(self.dsn)}"

    def pool(self) -> ConnectionPool[Any]:
        """The pool this process shares for the DSN and pool settings (opened on first use).

        This store's schema is brought up to date on its first use.
        """
        shared = self._shared
        if shared is not None and self._migrated and shared.pid == os.getpid():
            return shared.pool()
        import psycopg

        with self._lock:
            if self._shared is not None and self._shared.pid != os.getpid():  # forked: open this process's own
                self._shared, self._migrated = None, False
            if self._shared is None:
                self._shared = acquire(self.dsn, min_size=self.min_size, max_size=self.max_size, timeout=self.timeout)
            shared = self._shared
            try:
                pool = shared.pool()
                if not self._migrated:
                    with pool.connection() as conn:
                        self._migrate(conn)
                    self._migrated = True
            except (psycopg.Error, Exception) as exc:
                self._shared = None
                release(shared)
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(f"{self.store}: cannot reach {self._where()}: {exc}".rstrip()) from exc
        return pool

    def claim(self, key: int) -> Callable[[], None] | None:
        """Take the session advisory lock ``key`` on this process's claims connection, without waiting.

        The lock is held until the returned function is called, or the process ends; it keeps the shared
        connections open meanwhile, even when the store is closed.

        Returns:
            The release function, or None when the lock is held (by this process or another).

        Raises:
            StoreError: The server is unreachable or failed.
        """
        import psycopg

        self.pool()  # the schema exists, and an unreachable server is a StoreError naming the store
        shared = acquire(self.dsn, min_size=self.min_size, max_size=self.max_size, timeout=self.timeout)
        try:
            unlock = shared.try_lock(key)
        except BaseException as exc:
            release(shared)
            if isinstance(exc, psycopg.Error):
                raise StoreError(f"{self.store}: {self._where()} failed to take a claim: {exc}") from exc
            raise
        if unlock is None:
            release(shared)
            return None

        def give_up() -> None:
            try:
                unlock()
            finally:
                release(shared)

        return give_up

    @contextlib.contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection inside one transaction: it commits when the block ends, or rolls back on an error.

        psycopg errors become StoreError naming the store (the original is chained).
        """
        import psycopg

        try:
            with self.pool().connection() as conn, conn.transaction():
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{self.store}: {self._where()} failed: {exc}") from exc

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection in autocommit mode (held until the block ends)."""
        import psycopg

        try:
            with self.pool().connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise StoreError(f"{self.store}: {self._where()} failed: {exc}") from exc

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(_SCHEMA_TABLE)
            row = conn.execute("SELECT version FROM handrail_schema WHERE store = %s", (self.store,)).fetchone()
            version = check_version(row, store=self.store, where=self._where(), known=len(self.migrations))
            if version == 0:
                found = [
                    name
                    for (name,) in conn.execute(
                        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                        "AND tablename = ANY(%s) ORDER BY tablename",
                        (list(tables_created_by(self.migrations)),),
                    )
                ]
                if found:
                    raise damaged_without_version(
                        store=self.store, where=self._where(), row_missing=row is None, tables=found
                    )
            for script in self.migrations[version:]:
                conn.execute(script)  # trusted, constant SQL of this package
            conn.execute(
                "INSERT INTO handrail_schema (store, version) VALUES (%s, %s) "
                "ON CONFLICT (store) DO UPDATE SET version = excluded.version",
                (self.store, len(self.migrations)),
            )

    def close(self) -> None:
        """Stop using the shared connections; the last store (or lease) to stop closes them.

        A later use opens them again.
        """
        with self._lock:
            shared, self._shared, self._migrated = self._shared, None, False
        if shared is not None:
            release(shared)


class PostgresStore:
    """What the chat message and memory stores in PostgreSQL share: the DSN and pool, sessions, ``close``, secrets.

    A store calls :meth:`_open` from its constructor and writes its ``init_parameters`` with
    ``self._db.init_parameters(...)``.
    """

    dsn: str | Secret
    """The DSN as given (a str or a Secret)."""
    min_size: int
    """Connections the pool keeps open."""
    max_size: int
    """At most this many connections."""
    timeout: float
    """Seconds to wait for a connection (also for the server on first use)."""
    _db: PostgresDatabase

    def _open(
        self, dsn: str | Secret, migrations: Sequence[str], *, min_size: int, max_size: int, timeout: float
    ) -> None:
        self._db = PostgresDatabase(
            dsn, store=type(self).__name__, migrations=migrations, min_size=min_size, max_size=max_size, timeout=timeout
        )
        self.dsn = dsn
        self.min_size, self.max_size, self.timeout = min_size, max_size, timeout

    def _session(self, *, write: bool, key: str = "") -> contextlib.AbstractContextManager[psycopg.Connection[Any]]:
        """A pooled connection: inside one transaction when ``write``, else in autocommit mode."""
        return self._db.transaction() if write else self._db.connection()

    def close(self) -> None:
        """Close the connection pool (a later call opens it again)."""
        self._db.close()

    @classmethod
    def _read_envelope(cls, data: dict[str, Any]) -> dict[str, Any]:
        return {**data, "init_parameters": read_dsn_parameter(init_parameters(data, cls))}
