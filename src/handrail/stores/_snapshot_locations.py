"""Open a snapshot store from a URL or directory, and find the store a snapshot's ``location`` points at.

=========================================  ==========================================
``open_snapshot_store(...)`` argument       store
=========================================  ==========================================
``approvals/`` (any path, no scheme)        ``FileSnapshotStore("approvals/")``
``sqlite:///relative.db``                   ``SQLiteSnapshotStore("relative.db")``
``sqlite:////abs/path.db``                  ``SQLiteSnapshotStore("/abs/path.db")``
``postgresql://...`` / ``postgres://...``   ``PostgresSnapshotStore(dsn)``
``<scheme>://...``                          what :func:`register_snapshot_store` registered for it
=========================================  ==========================================

A value's scheme is what comes before ``://`` (or before ``:`` for a registered scheme written without
slashes), compared in lower case; a value without one is a directory. The built-in schemes (``sqlite``,
``postgresql``, ``postgres``) are registered like any other, and a libpq ``key=value`` string is a
``postgresql`` one.

A ``location`` (see ``SnapshotStore.locator``) is a snapshot file's absolute path, or such a URL followed by
``#<snapshot id>``.
"""

from __future__ import annotations

import inspect
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from handrail.errors import ConfigurationError, ConfigurationTypeError, HandrailError
from handrail.stores._snapshot_common import check_snapshot_id
from handrail.stores.types import SnapshotStore

__all__ = [
    "SnapshotStoreFactory",
    "names_a_database",
    "open_snapshot_store",
    "register_snapshot_store",
    "store_for_location",
]

_SQLITE = "sqlite:///"
_CONNINFO = re.compile(r"^\s*(host|hostaddr|dbname|user|port|service)\s*=")  # a libpq key=value string
_SCHEME_NAME = re.compile(r"^[a-z][a-z0-9+.-]+$")
_LEADING_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


class SnapshotStoreFactory(Protocol):
    """Builds the snapshot store a URL names (see :func:`register_snapshot_store`)."""

    def __call__(self, url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
        """The store for ``url`` (the whole URL, scheme included; a location's ``#<id>`` already removed).

        Args:
            url: E.g. ``"myapp://bucket/approvals"``.
            allowed_modules: Module prefixes whose classes the records' state values may name, besides
                handrail's.
            lock_timeout: Seconds a decision waits for a claim held elsewhere.
        """
        ...


def _sqlite(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
    path = url[len(_SQLITE) :] if url.startswith(_SQLITE) else ""
    if not path:
        raise ConfigurationError(
            f"A SQLite snapshot store is named sqlite:///<path> (sqlite:////abs/path.db for an absolute path), "
            f"got {url!r}."
        )
    from handrail.stores.snapshot_sqlite import SQLiteSnapshotStore

    return SQLiteSnapshotStore(path, allowed_modules=allowed_modules, lock_timeout=lock_timeout)


def _postgres(url: str, *, allowed_modules: tuple[str, ...], lock_timeout: float) -> SnapshotStore:
    from handrail.stores.snapshot_postgres import PostgresSnapshotStore

    return PostgresSnapshotStore(url, allowed_modules=allowed_modules, lock_timeout=lock_timeout)


_FACTORIES: dict[str, SnapshotStoreFactory] = {"sqlite": _sqlite, "postgresql": _postgres, "postgres": _postgres}
_BUILT_IN = frozenset(_FACTORIES)
_LOCK = threading.Lock()


def register_snapshot_store(scheme: str, factory: SnapshotStoreFactory, *, replace: bool = False) -> None:
    """Make ``<scheme>://...`` (and ``<scheme>:...``) name a snapshot store built by ``factory``.

    Every place that turns a string into a snapshot store goes through this registry:
    :func:`open_snapshot_store`, ``handrail.resume(..., store="<url>")``, a pausing strategy given a URL, and a
    resumed run whose snapshot was passed without its store (its ``location`` is ``<url>#<id>``, as the
    store's ``locator`` writes it).

    Args:
        scheme: The URL scheme: a letter, then letters, digits, ``+``, ``-`` or ``.`` (two characters at least,
            so a Windows drive letter stays a path); case does not matter.
        factory: Called as ``factory(url, allowed_modules=(...), lock_timeout=seconds)``; returns an object
            that satisfies :class:`~handrail.stores.types.SnapshotStore`.
        replace: Allow replacing a scheme registered before (a built-in one included); without it, registering
            a scheme twice is refused.

    A store the factory builds on :class:`~handrail.stores.SnapshotStoreBase` whose locations would not name the
    scheme (a directory store writes file paths) records the URL it was opened from (``opened_from``): its
    ``locator`` writes ``<url>#<id>``, so a run resumed from a snapshot object alone goes back through the
    factory, and the store it builds.

    Raises:
        ConfigurationTypeError: ``scheme`` is not a str, or ``factory`` is not callable.
        ConfigurationError: An invalid scheme, one registered already (without ``replace=True``), or a factory
            that cannot be called with those arguments.

    Examples:
        >>> from handrail.stores import FileSnapshotStore
        >>> def folder(url, *, allowed_modules, lock_timeout):  # myfolder:///abs/dir or myfolder:/abs/dir
        ...     return FileSnapshotStore(url.partition(":")[2].removeprefix("//"), allowed_modules=allowed_modules,
        ...                              lock_timeout=lock_timeout)
        >>> register_snapshot_store("myfolder", folder)
        >>> store = open_snapshot_store("myfolder:/tmp/approvals")
        >>> str(store.directory), store.locator("s1")
        ('/tmp/approvals', 'myfolder:/tmp/approvals#s1')
    """
    if not isinstance(scheme, str):
        raise ConfigurationTypeError(f"A snapshot store scheme is a str, got {type(scheme).__name__}.")
    if not callable(factory):
        raise ConfigurationTypeError(
            f"The factory for scheme {scheme!r} must be callable, got {type(factory).__name__}."
        )
    name = scheme.lower()
    if not _SCHEME_NAME.match(name):
        raise ConfigurationError(
            f"Invalid snapshot store scheme {scheme!r}: a letter, then letters, digits, '+', '-' or '.' (at least "
            f"two characters), without '://'."
        )
    _check_signature(name, factory)
    with _LOCK:
        if name in _FACTORIES and not replace:
            what = "a built-in scheme" if name in _BUILT_IN else "registered already"
            raise ConfigurationError(
                f"Snapshot store scheme {name!r} is {what}; pass replace=True to register another factory for it."
            )
        _FACTORIES[name] = factory


def _check_signature(scheme: str, factory: SnapshotStoreFactory) -> None:
    """Refuse a factory that cannot be called as ``factory(url, allowed_modules=..., lock_timeout=...)``."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read (some builtins): the call will tell
        return
    try:
        signature.bind("url", allowed_modules=(), lock_timeout=5.0)
    except TypeError as exc:
        raise ConfigurationError(
            f"The factory {_factory_name(factory)} for snapshot store scheme {scheme!r} cannot be called as "
            f"factory(url, *, allowed_modules, lock_timeout): {exc}."
        ) from exc


def _scheme(text: str) -> str | None:
    """The scheme ``text`` names a store by, or None for a directory."""
    if _CONNINFO.match(text):
        return "postgresql"
    if "://" in text:
        return text.partition("://")[0].lower()
    found = _LEADING_SCHEME.match(text)
    if found is not None and (found.group(1).lower() in _FACTORIES or found.group(1).lower() == "sqlite"):
        return found.group(1).lower()
    return None


def open_snapshot_store(
    url_or_dir: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), lock_timeout: float = 5.0
) -> SnapshotStore:
    """The snapshot store a CLI ``--store`` value, a URL of a registered scheme or a directory names.

    Args:
        url_or_dir: A directory path, ``sqlite:///<path>`` (three slashes, then the path: four for an absolute
            one), a ``postgresql://`` / ``postgres://`` URL (the password, if any, is better left to
            ``PGPASSWORD`` / ``~/.pgpass``), or a URL whose scheme :func:`register_snapshot_store` registered.
        allowed_modules: Module prefixes whose classes state values in the records may name, besides handrail's.
        lock_timeout: Seconds a decision waits for a claim held elsewhere.

    Returns:
        A FileSnapshotStore, SQLiteSnapshotStore or PostgresSnapshotStore (nothing is opened yet), or what a
        registered factory built.

    Raises:
        ConfigurationTypeError: ``url_or_dir`` is not a str or path, or a registered factory returned something
            that is not a SnapshotStore.
        ConfigurationError: An empty value, ``sqlite://`` without a path, an unknown ``scheme://``, or a
            registered factory that failed (its error is the cause; a handrail error it raises passes as is).
    """
    if not isinstance(url_or_dir, str | os.PathLike):
        raise ConfigurationTypeError(f"A snapshot store is named by a str or path, got {type(url_or_dir).__name__}.")
    text = os.fspath(url_or_dir)
    if not text:
        raise ConfigurationError("A snapshot store needs a directory or a URL, got ''.")
    modules = tuple(allowed_modules)
    scheme = _scheme(text)
    if scheme is None:
        from handrail.stores.snapshot_file import FileSnapshotStore

        return FileSnapshotStore(text, allowed_modules=modules, lock_timeout=lock_timeout)
    factory = _FACTORIES.get(scheme)
    if factory is None:
        custom = sorted(_FACTORIES.keys() - _BUILT_IN)
        also = f", or a URL of a registered scheme ({', '.join(custom)})" if custom else ""
        raise ConfigurationError(
            f"Unknown snapshot store {text!r}: give a directory, sqlite:///<path> or postgresql://...{also} "
            f"(register_snapshot_store adds a scheme)."
        )
    store = _built(scheme, factory, text, modules, lock_timeout)
    _comes_back(store, scheme, text)
    return store


def _factory_name(factory: object) -> str:
    name = getattr(factory, "__qualname__", None) or type(factory).__qualname__
    module = getattr(factory, "__module__", None)
    return f"{module}.{name}" if module else str(name)


def _built(
    scheme: str, factory: SnapshotStoreFactory, url: str, modules: tuple[str, ...], timeout: float
) -> SnapshotStore:
    """What ``factory`` builds for ``url``; a factory that fails (a handrail error aside) is a ConfigurationError."""
    try:
        store = factory(url, allowed_modules=modules, lock_timeout=timeout)
    except HandrailError:
        raise  # the factory's own account of the URL (a built-in one refusing sqlite:// without a path...)
    except Exception as exc:
        raise ConfigurationError(
            f"The factory {_factory_name(factory)} registered for snapshot store scheme {scheme!r} failed on "
            f"{url!r}: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(store, SnapshotStore):
        raise ConfigurationTypeError(
            f"The factory {_factory_name(factory)} registered for scheme {scheme!r} returned "
            f"{type(store).__name__}, which is not a SnapshotStore."
        )
    return store


def _comes_back(store: SnapshotStore, scheme: str, url: str) -> None:
    """Make the locations of a store opened from ``url`` name ``url``, when they would not lead to its factory.

    A snapshot's ``location`` is how a run given only the snapshot finds its store again; a directory store a
    registered scheme built would otherwise write plain file paths, and the resume would bypass the scheme.
    """
    from handrail.stores._snapshot_records import SnapshotRecords

    if not isinstance(store, SnapshotRecords) or store.opened_from is not None:
        return
    own = _scheme(store.locator("x"))
    if own is None or _FACTORIES.get(own) is not _FACTORIES.get(scheme):  # (postgres: and postgresql: are one)
        store.opened_from = url


def store_for_location(
    location: str | os.PathLike[str], *, allowed_modules: Iterable[str] = (), lock_timeout: float = 5.0
) -> tuple[SnapshotStore, str]:
    """The store and snapshot id an ``AgentSnapshot.location`` points at.

    Args:
        location: A snapshot file's path (``/abs/dir/<id>.json``), or ``<store URL>#<id>`` as
            ``SQLiteSnapshotStore.locator`` / ``PostgresSnapshotStore.locator`` (or the locator of a store of a
            registered scheme) write it.
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
    if _scheme(text) is not None:
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

    A database is named by ``scheme://...``, ``sqlite:...``, ``<registered scheme>:...`` or a libpq
    ``key=value`` string.
    """
    return _scheme(value) is not None
