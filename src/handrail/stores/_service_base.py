"""The :class:`~handrail.stores.service.ServiceStore` protocol written once over a backend's primitives.

A backend (:mod:`~handrail.stores._service_sql` for SQLite and PostgreSQL, :mod:`~handrail.stores._service_files`
for a directory) stores and reads tokens, events and run records; the rules live here only: how a token is made,
hashed and checked, which events a caller may append, how a run record changes (a compare-and-set on its
version, terminal states final), and the checks of every argument before anything is written.
"""

from __future__ import annotations

import hmac
import secrets
from abc import abstractmethod
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from handrail.dataclasses._approval_checks import Checker, iso
from handrail.dataclasses.service import (
    EVENT_KINDS,
    RUN_STATUSES,
    EventKind,
    Principal,
    Role,
    RunRecord,
    RunStatus,
    ServiceEvent,
    TokenInfo,
)
from handrail.errors import ConfigurationError, ConfigurationTypeError, RunConflictError, RunNotFoundError
from handrail.stores._events import EventLog, EventWatcher, check_timeout
from handrail.stores._service_records import (
    TERMINAL_RUN,
    TOKEN_ID,
    changed_run,
    check_new_run,
    token_hash,
)
from handrail.stores.service import EVENTS_KEPT, POLL_INTERVAL, EventPage

__all__ = ["MAX_RUNS", "RunLease", "ServiceStoreBase"]

MAX_RUNS = 1000
"""The most run records one ``list_runs`` returns."""
_MAX_EVENTS = 1000

Release = Callable[[], None]


class RunLease:
    """The claim on one service run (a :class:`~handrail.stores.types.Lease`), held by one resumer.

    Released by :meth:`release` (or leaving a ``with`` block), or by the operating system / the database server
    when the holding process dies (even by ``kill -9``).
    """

    def __init__(self, run_id: str, release: Release) -> None:
        self.run_id = run_id
        """The claimed run."""
        self._release: Release | None = release

    @property
    def held(self) -> bool:
        """True until the lease is released."""
        return self._release is not None

    def release(self) -> None:
        """Give the claim up; calling it again does nothing."""
        release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"RunLease({self.run_id!r}, held={self.held})"


def _moment(name: str, value: object) -> datetime:
    moment = Checker("service store", reading=False).moment(name, value)
    assert moment is not None
    return moment


class ServiceStoreBase(EventLog):
    """Tokens, the event log and run records over backend primitives (mixed into the snapshot stores)."""

    events_kept: ClassVar[int] = EVENTS_KEPT
    """The log keeps at least the newest this many events (a test may lower it on a subclass or an instance)."""
    prune_every: ClassVar[int] = 100
    """Every this many appends (by id), older events beyond :attr:`events_kept` are dropped."""
    poll_interval: ClassVar[float] = POLL_INTERVAL
    """Seconds between the watcher's polls of the newest event id (stores without notifications)."""

    # -- backend primitives ------------------------------------------------------------------------

    @abstractmethod
    def _token_insert(self, token: TokenInfo, secret_hash: str) -> bool:
        """Store a new token; False (nothing written) when a token not revoked has its name."""

    @abstractmethod
    def _token_rows(self) -> list[tuple[TokenInfo, str]]:
        """Every token with its hash, oldest first (``created_at``, then id)."""

    @abstractmethod
    def _token_get(self, token_id: str) -> tuple[TokenInfo, str] | None:
        """The token with this id and its hash, or None."""

    @abstractmethod
    def _token_revoke(self, name_or_id: str, at: datetime) -> TokenInfo | None:
        """Mark the valid token with this name or id revoked at ``at`` (atomically); it, revoked, or None."""

    @abstractmethod
    def _events_read(self, after_id: int, limit: int) -> tuple[list[ServiceEvent], int, int]:
        """``(events with ids > after_id, oldest first, at most limit; ids <= this were dropped; the newest id)``."""

    @abstractmethod
    def _events_newest(self) -> int:
        """The newest event id (0: none)."""

    @abstractmethod
    def _run_insert(self, record: RunRecord) -> bool:
        """Store a new run record; False when its id exists."""

    @abstractmethod
    def _run_get(self, run_id: str) -> RunRecord | None:
        """The run record, or None (CorruptRecordError: it cannot be read)."""

    @abstractmethod
    def _run_replace(self, updated: RunRecord, expected_version: int) -> RunRecord | None:
        """Replace the record where it is at ``expected_version``: None when written, else the record as it is."""

    @abstractmethod
    def _run_list(self, status: RunStatus | None, limit: int, before: tuple[datetime, str] | None) -> list[RunRecord]:
        """Readable run records, newest first (``created_at``, then id, descending); damaged ones skipped.

        With ``before``, only those whose ``(created_at, run_id)`` is below it.
        """

    @abstractmethod
    def _run_claim(self, run_id: str) -> Release | None:
        """Take the run's claim without waiting: its release function, or None when held."""

    def _event_listener(self) -> Any:
        """A :data:`~handrail.stores._events.Listen` for the watcher (None: poll); PostgreSQL overrides it."""
        return None

    def _watcher_exit(self) -> None:
        """Called in the watcher thread as it ends (SQLite closes that thread's connection)."""

    # -- tokens ------------------------------------------------------------------------------------

    def add_token(
        self, name: str, role: Role, *, tools: tuple[str, ...] = ("*",), at: datetime
    ) -> tuple[TokenInfo, str]:
        """Add a bearer token for the principal ``name``.

        Args:
            name: The principal's name (unique among the tokens not revoked).
            role: ``viewer``, ``approver`` or ``admin``.
            tools: For an approver, the tool-name patterns it may decide.
            at: Now (timezone-aware).

        Returns:
            ``(the token's record, its text)``: the text, ``<token_id>.<secret>``, is shown once; the store keeps
            only its SHA-256.

        Raises:
            ConfigurationError: A bad name, role or pattern (as :class:`Principal` refuses them), or a token not
                revoked has this name already.
        """
        moment = _moment("at", at)
        tools = tuple(tools) if isinstance(tools, list) else tools
        Principal(name, role, tools=tools)  # the name, role and patterns follow the Principal rules
        token_id = "tk_" + secrets.token_hex(8)
        text = f"{token_id}.{secrets.token_urlsafe(32)}"
        token = TokenInfo(token_id, name, role, tools, moment)
        if not self._token_insert(token, token_hash(text)):
            raise ConfigurationError(
                f"A token named {name!r} exists in {self} (not revoked); revoke it first or choose another name."
            )
        return token, text

    def list_tokens(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        """The tokens, oldest first; revoked ones only with ``include_revoked``. Never a token's text or hash."""
        return [t for t, _ in self._token_rows() if include_revoked or t.revoked_at is None]

    def revoke_token(self, name_or_id: str, *, at: datetime) -> TokenInfo:
        """Revoke the valid token with this name or id: it authenticates nobody from now on, in any process.

        Raises:
            ConfigurationError: No token that is not revoked has this name or id.
        """
        moment = _moment("at", at)
        if not isinstance(name_or_id, str):
            raise ConfigurationTypeError(f"revoke_token takes a name or a token id, got {type(name_or_id).__name__}.")
        revoked = self._token_revoke(name_or_id, moment)
        if revoked is None:
            raise ConfigurationError(f"No valid token named {name_or_id!r:.80} (or with that id) in {self}.")
        return revoked

    def authenticate(self, token: str) -> TokenInfo | None:
        """The valid token whose text is ``token`` (a constant-time comparison of hashes), or None.

        A malformed, unknown or revoked token is None; the text is never logged nor kept.
        """
        if not isinstance(token, str) or len(token) > 200:
            return None
        token_id, dot, secret = token.partition(".")
        if not dot or not secret or not TOKEN_ID.fullmatch(token_id):
            return None
        found = self._token_get(token_id)
        if found is None:
            return None
        info, stored = found
        if not hmac.compare_digest(token_hash(token), stored) or info.revoked_at is not None:
            return None
        return info

    def session_key(self, token_id: str) -> tuple[TokenInfo, bytes] | None:
        """The valid token with this id and a secret key for signing its session cookies, or None.

        The key is an HMAC-SHA256 of a fixed label keyed by the token's stored hash: every process sharing the
        store derives the same one, nobody without the store can, and it is gone once the token is revoked.
        """
        if not isinstance(token_id, str) or not TOKEN_ID.fullmatch(token_id):
            return None
        found = self._token_get(token_id)
        if found is None or found[0].revoked_at is not None:
            return None
        info, stored = found
        return info, hmac.new(stored.encode("ascii"), b"handrail session cookie v1", "sha256").digest()

    # -- events ------------------------------------------------------------------------------------

    def append_event(self, kind: EventKind, data: Mapping[str, Any], *, at: datetime) -> ServiceEvent:
        """Append a run event (``run.*``); approval events are written by the approval changes themselves.

        Raises:
            ConfigurationError: An unknown kind, an ``approval.*`` kind, data that is not a JSON object.
        """
        moment = _moment("at", at)
        if kind not in EVENT_KINDS:
            raise ConfigurationError(f"Unknown event kind {kind!r:.40}; the kinds are {', '.join(EVENT_KINDS)}.")
        if kind.startswith("approval."):
            raise ConfigurationError(
                f"{kind} events are written by the approval changes themselves (in the same transaction); "
                "append_event takes run events."
            )
        if not isinstance(data, Mapping):
            raise ConfigurationTypeError(f"Event data is a mapping of JSON data, got {type(data).__name__}.")
        payload = Checker("event", reading=False).json_data("data", dict(data))
        (event,) = self._events_append([(kind, moment, payload)])
        return event

    def events_after(self, after_id: int, *, limit: int = 1000) -> EventPage:
        """The events with ids greater than ``after_id``, oldest first, at most ``limit`` (1 to 1000).

        ``gap`` is True when some of the events after ``after_id`` were dropped already (the log is bounded):
        the reader missed them and must re-list.
        """
        if type(after_id) is not int or after_id < 0:
            raise ConfigurationError(f"after_id must be an int >= 0, got {after_id!r:.40}.")
        if type(limit) is not int or not 1 <= limit <= _MAX_EVENTS:
            raise ConfigurationError(f"limit must be an int from 1 to {_MAX_EVENTS}, got {limit!r:.40}.")
        events, pruned_up_to, last_id = self._events_read(after_id, limit)
        return EventPage(tuple(events), after_id < pruned_up_to, max(last_id, events[-1].id if events else 0))

    def wait_for_events(self, after_id: int, *, timeout: float) -> bool:
        """Block until an event newer than ``after_id`` exists (True) or ``timeout`` seconds pass (False).

        Waiters of one store object share one watcher thread (see :mod:`handrail.stores._events`).
        """
        if type(after_id) is not int or after_id < 0:
            raise ConfigurationError(f"after_id must be an int >= 0, got {after_id!r:.40}.")
        return self._watcher().wait(after_id, check_timeout(timeout))

    def _watcher(self) -> EventWatcher:
        watcher: EventWatcher | None = self.__dict__.get("_event_watcher")
        if watcher is None:
            watcher = EventWatcher(
                self._events_newest, interval=self.poll_interval, listen=self._event_listener(),
                on_exit=self._watcher_exit,
            )  # fmt: skip
            watcher = self.__dict__.setdefault("_event_watcher", watcher)
        return watcher

    def _close_watcher(self) -> None:
        watcher: EventWatcher | None = self.__dict__.get("_event_watcher")
        if watcher is not None:
            watcher.close()

    def _prune_due(self, first: int, last: int) -> int | None:
        """After appending ids ``first`` to ``last``: the highest id to drop now, or None.

        Pruning is due when the appended ids reach a multiple of :attr:`prune_every`, so its cost (one delete, or
        one rewrite of a log file) is spread over that many appends.
        """
        every = max(1, self.prune_every)
        cutoff = last - self.events_kept
        return cutoff if last // every != (first - 1) // every and cutoff > 0 else None

    # -- runs --------------------------------------------------------------------------------------

    def create_run(self, record: RunRecord) -> RunRecord:
        """Store a new run record.

        Raises:
            ConfigurationError: A run with this id exists, or a field is bad (named).
        """
        checked = check_new_run(record)
        if not self._run_insert(checked):
            raise ConfigurationError(f"A run {checked.run_id!r} exists in {self}; run ids are unique.")
        return checked

    def get_run(self, run_id: str) -> RunRecord:
        """The run record.

        Raises:
            RunNotFoundError: No run with this id. CorruptRecordError: Its record cannot be read.
        """
        found = self._run_get(self._run_key(run_id))
        if found is None:
            raise RunNotFoundError(f"No run {run_id!r:.80} in {self}.")
        return found

    def update_run(self, run_id: str, *, expected_version: int, at: datetime, **changes: Any) -> RunRecord:
        """Change ``status``, ``snapshot_id``, ``result`` or ``error``: a compare-and-set on the version.

        Returns:
            The record as written (``version + 1``, ``updated_at`` = ``at``).

        Raises:
            RunConflictError: The run is at another version than ``expected_version``, or it is finished or
                failed (terminal: it takes no more changes); ``current`` holds it.
            RunNotFoundError: No run with this id.
            ConfigurationError: A field that cannot change, or a bad value (named).
        """
        moment = _moment("at", at)
        Checker("update_run", reading=False).integer("expected_version", expected_version, minimum=1)
        current = self.get_run(run_id)
        if current.status not in TERMINAL_RUN and current.version == expected_version:
            updated = changed_run(current, moment, changes)
            now = self._run_replace(updated, expected_version)
            if now is None:
                return updated
            current = now
        raise self._run_refusal(current, expected_version)

    def list_runs(
        self, *, status: RunStatus | None = None, limit: int = 100, before: tuple[datetime, str] | None = None
    ) -> list[RunRecord]:
        """Run records, newest first (``created_at``, then id), at most ``limit`` (1 to 1000); damaged ones skipped.

        ``before`` is the ``(created_at, run_id)`` of the last run of the previous page: only the runs listed after
        it come (keyset paging: every run once, even while runs are added).
        """
        checker = Checker("list_runs", reading=False)
        checker.choice("status", status, RUN_STATUSES, optional=True)
        if type(limit) is not int or not 1 <= limit <= MAX_RUNS:
            raise ConfigurationError(f"limit must be an int from 1 to {MAX_RUNS}, got {limit!r:.40}.")
        if before is not None:
            if not isinstance(before, tuple) or len(before) != 2:
                raise ConfigurationTypeError(f"before must be a (created_at, run_id) tuple, got {before!r:.80}.")
            checker.text("before[1]", before[1])
            before = (_moment("before[0]", before[0]), before[1])
        return self._run_list(status, limit, before)

    def claim_run(self, run_id: str) -> RunLease | None:
        """The run's claim, without waiting; None when another holder (any process, or this one) has it.

        The claim is not the snapshot's: a resumer holds the run's claim while ``resume()`` takes the snapshot's.
        """
        key = self._run_key(run_id)
        release = self._run_claim(key)
        return None if release is None else RunLease(key, release)

    def _run_key(self, run_id: object) -> str:
        from handrail.stores._snapshot_common import check_snapshot_id

        if not isinstance(run_id, str):
            raise ConfigurationTypeError(f"A run id is a str, got {type(run_id).__name__}.")
        try:
            return check_snapshot_id(run_id)
        except ConfigurationError:
            raise RunNotFoundError(f"No run {run_id!r:.80} in {self}: it is not a run id.") from None

    def _run_refusal(self, current: RunRecord, expected: int) -> RunConflictError:
        if current.status in TERMINAL_RUN:
            when = iso(current.updated_at)
            what = f"is {current.status} (version {current.version}, at {when}): it takes no more changes"
        else:
            what = f"is at version {current.version} ({current.status}); the update expected {expected}: read it again"
        return RunConflictError(f"Run {current.run_id} in {self} {what}.", run_id=current.run_id, current=current,
                                expected_version=expected)  # fmt: skip
