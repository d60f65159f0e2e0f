"""Where the ``handrail`` commands keep snapshots: ``--dir DIR`` or ``--store URL``, opened as one SnapshotStore.

Every command that reads or decides snapshots goes through :class:`Where`: a directory (``--dir``, or a
directory given to ``--store``) is a :class:`~handrail.stores.FileSnapshotStore`, ``sqlite:///path`` a
:class:`~handrail.stores.SQLiteSnapshotStore`, ``postgresql://...`` a :class:`~handrail.stores.PostgresSnapshotStore`
(see :func:`~handrail.stores.open_snapshot_store`).

The SnapshotStore protocol lists only paused snapshots; the interrupted runs ``approvals list`` reports (status
``running`` while nobody holds the claim) and the ids named in an "unknown snapshot" error are read through the
backend primitives of :class:`~handrail.stores._snapshot_base.SnapshotStoreBase`, here and nowhere else.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from handrail.cli._common import fail_usage, printable, quote
from handrail.cli._service import APPROVAL_ID

if TYPE_CHECKING:
    from handrail.dataclasses.snapshot import AgentSnapshot
    from handrail.stores._snapshot_base import SnapshotStoreBase

__all__ = ["LOCK_TIMEOUT", "Where", "is_store_url", "open_where", "opened", "where_options"]

LOCK_TIMEOUT = 5.0
"""Seconds a decision waits for a snapshot's claim held by another process (then exit code 5)."""

_SHOWN_IDS = 20


def is_store_url(value: str) -> bool:
    """Whether ``value`` names a database store (``scheme://...`` or a libpq ``key=value`` string), not a directory."""
    from handrail.stores._snapshot_locations import names_a_database

    return names_a_database(value)


@dataclass(frozen=True)
class Where:
    """An opened snapshot store and how the command line names it."""

    store: SnapshotStoreBase
    """The store."""
    flag: str
    """``--dir`` or ``--store``: the option the user gave, repeated in the commands the CLI prints."""
    value: str
    """The option's value as printed: the absolute directory, or the store's URL without a password."""
    allow_modules: tuple[str, ...] = ()
    """The ``--allow-module`` prefixes the command was given: the commands it prints need them too."""

    @property
    def files(self) -> bool:
        """True for a directory of snapshot files."""
        from handrail.stores.snapshot_file import FileSnapshotStore

        return isinstance(self.store, FileSnapshotStore)

    @property
    def noun(self) -> str:
        """What holds one snapshot: ``file`` or ``record``."""
        return "file" if self.files else "record"

    @property
    def arg(self) -> str:
        """``--dir /abs/dir`` or ``--store URL`` (then any ``--allow-module PREFIX``), quoted for a shell, escaped."""
        trusted = [f"--allow-module {quote(prefix)}" for prefix in self.allow_modules]
        return " ".join([f"{self.flag} {quote(self.value)}", *trusted])

    @property
    def label(self) -> str:
        """The store for a sentence: the directory, or the URL (escaped for the terminal)."""
        return printable(self.value)

    def record_name(self, snapshot_id: str) -> str:
        """A snapshot's file name (``<id>.json``) or ``snapshot <id>``, for warnings."""
        return f"{snapshot_id}.json" if self.files else f"snapshot {snapshot_id}"

    def claimed(self, snapshot_id: str, *, unchecked: bool = True) -> bool:
        """Whether a process holds the snapshot's claim now.

        Args:
            snapshot_id: The snapshot.
            unchecked: What a claim that cannot be checked (e.g. in a read-only directory) counts as.
        """
        from handrail.errors import HandrailError

        try:
            return bool(self.store.claimed(snapshot_id))
        except OSError:
            return unchecked
        except HandrailError:
            return False

    def state(self, snapshot: AgentSnapshot) -> str:
        """The snapshot's status as the CLI reports it.

        The stored status, except ``"running"`` while no process holds the snapshot's claim, which is
        ``"interrupted"`` (a crashed or cancelled resume, a run that failed with an error).
        """
        if snapshot.status == "running" and snapshot.snapshot_id and not self.claimed(snapshot.snapshot_id):
            return "interrupted"
        return str(snapshot.status)

    def busy(self, snapshot_id: str) -> Callable[[], bool]:
        """For :func:`~handrail.cli._common.errors_as_exit_codes`: whether the snapshot is claimed right now."""
        return lambda: self.claimed(snapshot_id)

    def find(self, out: Any, snapshot_id: str) -> str:
        """The id of SNAPSHOT_ID in the store; exits with a usage error naming the ids present when unknown.

        Raises:
            ConfigurationError: An id the store refuses (``#``, a leading ``.``, too long).
        """
        stem = snapshot_id.removesuffix(".json")
        if "/" in stem or "\\" in stem or stem in ("", ".", ".."):
            fail_usage(out, f"SNAPSHOT_ID {snapshot_id!r} must be a snapshot id, not a path.")
        store = self.store
        if store.exists(stem):
            return stem
        if self.files:
            ids = [p.stem for p in store.files()] if Path(self.value).is_dir() else []  # type: ignore[attr-defined]
            what = "Snapshots there"
        else:
            ids, what = store.known_ids(), "Recently changed snapshots there"
        if stem.lower().startswith("ap_") and not APPROVAL_ID.fullmatch(stem):
            fail_usage(
                out,
                f"'{printable(stem)}' is neither a snapshot in {self.label} nor an approval id: an approval id is "
                "ap_ and 32 lowercase hex digits (see 'handrail approvals list').",
            )
        shown = [printable(i) for i in ids]
        present = ", ".join(shown[:_SHOWN_IDS]) + (
            f" (and {len(shown) - _SHOWN_IDS} more)" if len(shown) > _SHOWN_IDS else ""
        )
        fail_usage(out, f"No snapshot '{printable(stem)}' in {self.label}. {what}: {present or 'none'}.")

    def scan(
        self, skipped: Callable[[str, str, Exception], None]
    ) -> tuple[list[AgentSnapshot], list[AgentSnapshot], list[AgentSnapshot]]:
        """``(paused, running, interrupted)`` snapshots, each oldest first; unreadable records are skipped.

        Unreadable records are reported through ``skipped(snapshot id, record name, error)``. Running: a process
        holds the snapshot's claim (a run or a resume in progress, or a cancelled run whose tool call is still
        finishing). Interrupted: status ``running`` while no process holds it.
        """
        found = self.store.list_snapshots(
            ("paused", "running"),
            on_error=lambda snapshot_id, exc: skipped(snapshot_id, self.record_name(snapshot_id), exc),
        )
        # A paused snapshot whose claim is held is being resumed (the resume has not marked it 'running' yet); one
        # whose claim cannot be checked stays listed as paused.
        held = {id(s) for s in found if s.snapshot_id and self.claimed(s.snapshot_id, unchecked=s.status == "running")}
        paused = [s for s in found if s.status == "paused" and id(s) not in held]
        running = [s for s in found if id(s) in held]
        interrupted = [s for s in found if s.status == "running" and id(s) not in held]
        return paused, running, interrupted


_DIR_HELP = "The snapshot directory (the one given to --pause-for-approval)."
_STORE_HELP = (
    "The snapshot store instead of --dir: sqlite:///PATH (four slashes for an absolute path), postgresql://... "
    "(password from PGPASSWORD or ~/.pgpass), or a directory."
)


def where_options(command: Any) -> Any:
    """Add ``--dir DIR`` and ``--store URL`` (exactly one is required; checked by :func:`open_where`)."""
    command = click.option("--store", "store_url", metavar="URL", help=_STORE_HELP)(command)
    return click.option("--dir", "directory", metavar="DIR", type=click.Path(path_type=Path), help=_DIR_HELP)(command)


def _directory(out: Any, flag: str, given: str | os.PathLike[str], *, create: bool) -> Path:
    folder = Path(given).expanduser().absolute()
    if folder.exists() and not folder.is_dir():
        fail_usage(out, f"{flag} {printable(given)}: not a directory.")
    if not folder.exists() and not create:
        fail_usage(out, f"{flag} {printable(given)}: no such directory.")
    return folder


def _based(out: Any, flag: str, given: str | os.PathLike[str], store: Any) -> SnapshotStoreBase:
    """``store``, when it is built on SnapshotStoreBase (the commands list and check claims through its primitives)."""
    from handrail.stores._snapshot_base import SnapshotStoreBase

    if not isinstance(store, SnapshotStoreBase):
        fail_usage(out, f"{flag} {printable(given)}: the command needs a snapshot store built on SnapshotStoreBase, "
                        f"got {type(store).__name__}; use it from Python (handrail.resume).")  # fmt: skip
    return store


def open_where(
    out: Any,
    directory: Path | None,
    store_url: str | None,
    allow_modules: tuple[str, ...] = (),
    *,
    create: bool = False,
    flag: str | None = None,
) -> Where:
    """Open the snapshot store named by ``--dir`` or ``--store`` (exactly one of them).

    Args:
        out: The console usage errors go to.
        directory: ``--dir``.
        store_url: ``--store`` (a URL, or a directory).
        allow_modules: ``--allow-module`` prefixes, trusted for classes named inside the snapshots.
        create: A directory or SQLite file that does not exist yet is created on the first write (``run``); else
            it is a usage error (a typo must not look like an empty store).
        flag: The option ``store_url`` came from, for messages (default ``--store``).

    Returns:
        The store and how to name it.

    Raises:
        click.UsageError: Neither or both of ``--dir`` and ``--store``.
        SystemExit: With code 2, after an error line, for a missing directory or database file, or a URL that
            names no store.
    """
    from handrail.errors import ConfigurationError
    from handrail.stores._snapshot_locations import open_snapshot_store

    if (directory is None) == (store_url is None):
        raise click.UsageError(
            "Name the snapshots with exactly one of --dir DIR (a directory of snapshot files) and --store URL "
            "(sqlite:///PATH, postgresql://..., or a directory)."
        )
    options: dict[str, Any] = {"allowed_modules": allow_modules, "lock_timeout": LOCK_TIMEOUT}
    if directory is not None:
        folder = _directory(out, "--dir", directory, create=create)
        return Where(_based(out, "--dir", folder, open_snapshot_store(str(folder), **options)), "--dir", str(folder),
                     allow_modules)  # fmt: skip
    assert store_url is not None
    name = flag or "--store"
    if not store_url.strip():
        fail_usage(out, f"{name} is empty; give sqlite:///PATH, postgresql://... or a directory.")
    if not is_store_url(store_url):
        folder = _directory(out, name, store_url, create=create)
        store = _based(out, name, store_url, open_snapshot_store(str(folder), **options))
        return Where(store, name if flag is None else "--dir", str(folder), allow_modules)
    try:
        store = _based(out, name, store_url, open_snapshot_store(store_url, **options))
    except ConfigurationError as exc:
        fail_usage(out, f"{name} {printable(store_url)}: {exc}")
    path = getattr(store, "path", None)
    if isinstance(path, str):  # SQLite
        if path == ":memory:":
            fail_usage(out, f"{name} {printable(store_url)}: an in-memory database is gone when the command ends.")
        if not create and not Path(path).is_file():
            fail_usage(out, f"{name} {printable(store_url)}: no such database file ({printable(path)}).")
        if create and Path(path).is_dir():
            fail_usage(out, f"{name} {printable(store_url)}: {printable(path)} is a directory, not a database file.")
        return Where(store, "--store", f"sqlite:///{path}", allow_modules)
    return Where(store, "--store", store.locator("x").rpartition("#")[0], allow_modules)


@contextlib.contextmanager
def opened(
    out: Any,
    directory: Path | None,
    store_url: str | None,
    allow_modules: tuple[str, ...] = (),
    *,
    create: bool = False,
    flag: str | None = None,
) -> Iterator[Where]:
    """:func:`open_where`, closing the store's connections when the command ends (an exit included)."""
    where = open_where(out, directory, store_url, allow_modules, create=create, flag=flag)
    try:
        yield where
    finally:
        where.store.close()
