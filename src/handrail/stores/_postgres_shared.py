"""One process's connections to one PostgreSQL database, shared by every store object that names it.

A resumed run opens a store object of its own from its snapshot's location, so a process resuming 200 runs
at once holds 200 store objects. They share one :class:`SharedConnections` per DSN and pool settings: a
bounded pool (``max_size``) for every query and transaction, and one more connection that holds every claim
of the process as a session advisory lock. A process therefore uses at most ``max_size + 1`` connections per
DSN and pool settings, however many store objects and leases it holds, and a claim still ends with its
process: the server drops a session's advisory locks when its connection ends (e.g. after ``kill -9``).

Advisory locks stack within one session, so the claims connection cannot tell two claims of this process on
one key apart: :meth:`SharedConnections.try_lock` keeps the keys this process holds and refuses a second
claim itself. Every use of the claims connection is serialized by a lock and none of them waits on the server
(``pg_try_advisory_lock``, ``pg_advisory_unlock``), so a claim never waits for a connection of the pool, and
an event loop calling a store is blocked for one round trip at most.

The connections close when the last store object using them is closed and the last lease taken through them
is released (:func:`release`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["SharedConnections", "acquire", "release"]

Address = tuple[tuple[str, str], ...] | str

_SHARED: dict[tuple[Any, ...], SharedConnections] = {}
_SHARED_LOCK = threading.Lock()


class SharedConnections:
    """A bounded connection pool and one claims connection to one database (see the module docstring).

    Made by :func:`acquire`; every method may raise ``psycopg.Error`` (the caller names the store).
    """

    def __init__(self, key: tuple[Any, ...], dsn: str, min_size: int, max_size: int, timeout: float) -> None:
        self.key = key
        self.pid: int = key[0]
        """The process these connections belong to (a forked child inherits them, and must not use them)."""
        self.dsn, self.min_size, self.max_size, self.timeout = dsn, min_size, max_size, timeout
        self.users = 0
        """Store objects and leases using these connections (guarded by the registry's lock)."""
        self._pool: ConnectionPool[Any] | None = None
        self._pool_lock = threading.Lock()
        self._claims: psycopg.Connection[Any] | None = None
        self._claims_lock = threading.Lock()
        self._held: dict[int, psycopg.Connection[Any]] = {}
        """Advisory lock keys held by this process, each with the claims connection it was taken on."""

    def pool(self) -> ConnectionPool[Any]:
        """The pool, opened on first use (a refused or failed login raises at once, with its reason)."""
        if self._pool is not None:
            return self._pool
        with self._pool_lock:
            if self._pool is None:
                import psycopg
                from psycopg_pool import ConnectionPool

                psycopg.connect(self.dsn, connect_timeout=max(2, round(self.timeout))).close()
                pool: ConnectionPool[Any] = ConnectionPool(
                    self.dsn, min_size=self.min_size, max_size=self.max_size, timeout=self.timeout, open=False,
                    kwargs={"autocommit": True},
                )  # fmt: skip
                try:
                    pool.open(wait=True, timeout=self.timeout)
                except BaseException:
                    pool.close()
                    raise
                self._pool = pool
        return self._pool

    def try_lock(self, key: int) -> Callable[[], None] | None:
        """Take the session advisory lock ``key`` on the claims connection, without waiting.

        Returns:
            The function that gives it up, or None when it is held (by this process or any other).
        """
        import psycopg

        with self._claims_lock:
            if key in self._held:
                return None
            for attempt in (1, 2):  # a claims connection the server has closed since is replaced once
                conn = self._claims_connection()
                try:
                    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                    break
                except psycopg.OperationalError:
                    self._drop_claims_connection()
                    if attempt == 2:
                        raise
            if not (row and row[0]):
                return None
            self._held[key] = conn
        return functools.partial(self._unlock, key, conn)

    def _claims_connection(self) -> psycopg.Connection[Any]:
        if self._claims is None or self._claims.closed:
            import psycopg

            self._claims = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(2, round(self.timeout)))
        return self._claims

    def _drop_claims_connection(self) -> None:
        """Close the claims connection: the server drops the locks it held (their leases are lost with it)."""
        if self._claims is not None:
            with contextlib.suppress(Exception):
                self._claims.close()
            self._claims = None

    def _unlock(self, key: int, conn: psycopg.Connection[Any]) -> None:
        import psycopg

        if self.pid != os.getpid():
            return  # a lease inherited by a forked child: the lock belongs to the parent
        with self._claims_lock:
            if self._held.get(key) is conn:
                del self._held[key]
            if conn is self._claims and not conn.closed:
                with contextlib.suppress(psycopg.Error):  # a lost connection took the lock with it
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

    def close(self) -> None:
        """Close the pool and the claims connection."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        with self._claims_lock:
            self._drop_claims_connection()
            self._held.clear()


def _forget_the_parents() -> None:
    """In a forked child: the parent's connections are not this process's (never used, never closed here)."""
    global _SHARED_LOCK  # the parent's lock may have been held by another thread at the fork
    _SHARED.clear()
    _SHARED_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows, which does not fork
    os.register_at_fork(after_in_child=_forget_the_parents)


def _address(dsn: str) -> Address:
    """The DSN's parameters, so a URL and a key/value string naming the same database share connections."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        return tuple(sorted((k, str(v)) for k, v in conninfo_to_dict(dsn).items()))
    except Exception:  # a DSN libpq refuses fails when it is used, with libpq's message
        return dsn


def acquire(dsn: str, *, min_size: int, max_size: int, timeout: float) -> SharedConnections:
    """This process's shared connections for the DSN and pool settings, counted as one more user."""
    key = (os.getpid(), _address(dsn), min_size, max_size, timeout)  # a forked child opens its own
    with _SHARED_LOCK:
        shared = _SHARED.get(key)
        if shared is None:
            shared = _SHARED[key] = SharedConnections(key, dsn, min_size, max_size, timeout)
        shared.users += 1
    return shared


def release(shared: SharedConnections) -> None:
    """One user is done with ``shared``; the last one closes its connections."""
    with _SHARED_LOCK:
        shared.users -= 1
        last = shared.users <= 0 and _SHARED.get(shared.key) is shared
        if last:
            del _SHARED[shared.key]
    if last:
        shared.close()
