"""The store's event log as the approval records and the service see it, and waiting for its next event.

:class:`EventLog` is the one primitive both mixins of a snapshot store need: the approval records write their
events through it inside their own write scope (:meth:`EventLog._events_write`), the service store appends
run events and reads them back.

:class:`EventWatcher` makes :meth:`~handrail.stores.service.ServiceStore.wait_for_events` cheap for many
waiters (one per open event stream of a server): one background thread per store object learns the newest
event id — by a poll every :data:`~handrail.stores.service.POLL_INTERVAL` seconds, or from PostgreSQL's
``LISTEN`` — and wakes every waiter through one condition. The thread starts with the first waiter and ends
about a second after the last one left (or when the store is closed), so an idle store holds no thread and no
listening connection.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from handrail.dataclasses.service import EventKind, ServiceEvent
from handrail.errors import ConfigurationError, StoreError

__all__ = ["EventItem", "EventLog", "EventWatcher", "Listen", "check_timeout"]

EventItem = tuple[EventKind, datetime, dict[str, Any]]
"""An event to append: its kind, time and JSON data (the store gives it its id)."""

Listen = Callable[[Callable[[int], None], Callable[[], bool]], None]
"""A blocking listener: ``listen(report, keep_going)`` reports the newest id once it listens, then every new
event's id, and returns when ``keep_going()`` is False; it raises StoreError when its connection fails."""

_IDLE = 1.0
"""Seconds the watcher thread outlives its last waiter (an event stream waits again at once after each event)."""
_RETRY_LISTEN = 1.0
"""Seconds a watcher polls after its listener failed, before it listens again."""


def check_timeout(timeout: object) -> float:
    """A timeout in seconds, a number >= 0 (ConfigurationError otherwise)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout >= 0:
        raise ConfigurationError(f"timeout must be a number of seconds >= 0, got {timeout!r:.40}.")
    return float(timeout)


class EventLog(ABC):
    """The event log's write primitives (a backend supplies them; the rules are in the service store base)."""

    @abstractmethod
    def _events_write(self, handle: Any, items: Sequence[EventItem]) -> None:
        """Append ``items`` inside an approval's write scope ``handle``: they land with its change, or not at all."""

    @abstractmethod
    def _events_append(self, items: Sequence[EventItem]) -> list[ServiceEvent]:
        """Append ``items`` on their own (one transaction, or under the log's lock); returns them with their ids."""


class EventWatcher:
    """Wakes every waiter of one store object when an event newer than theirs exists (see the module docstring).

    Args:
        newest: The newest event id in the store (0: none), read afresh.
        interval: Seconds between polls of ``newest`` (without ``listen``, or while the listener is down).
        listen: A listener (PostgreSQL): the watcher then learns ids from it instead of polling.
        on_exit: Called in the watcher thread as it ends (e.g. to close that thread's database connection).
    """

    def __init__(
        self,
        newest: Callable[[], int],
        *,
        interval: float,
        listen: Listen | None = None,
        on_exit: Callable[[], None] | None = None,
    ) -> None:
        self._newest = newest
        self._interval = interval
        self._listen = listen
        self._on_exit = on_exit
        self._cond = threading.Condition()
        self._last = 0
        self._waiters = 0
        self._left_at = 0.0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._listen_after = 0.0

    def wait(self, after_id: int, timeout: float) -> bool:
        """Block until an event newer than ``after_id`` exists (True) or ``timeout`` seconds pass (False).

        Raises:
            StoreError: The store cannot be read (the first check is made by the caller's thread).
        """
        if self._newest() > after_id:
            return True
        deadline = time.monotonic() + timeout
        with self._cond:
            if self._last > after_id:
                return True
            self._waiters += 1
            self._start()
            try:
                while self._last <= after_id:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._closed:
                        return False
                    self._cond.wait(remaining)
                return True
            finally:
                self._waiters -= 1
                self._left_at = time.monotonic()

    def close(self) -> None:
        """Stop the thread (waiters return False at once); a later :meth:`wait` starts it again."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2.0)
        with self._cond:
            self._closed = False

    def _start(self) -> None:
        """Start the thread unless it runs (called holding the condition)."""
        if self._pid != os.getpid():  # a forked child: the parent's thread is not here
            self._pid, self._thread = os.getpid(), None
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(target=self._run, name="handrail-event-watcher", daemon=True)
        self._thread.start()

    def _keep_going(self) -> bool:
        with self._cond:
            if self._closed:
                return False
            return self._waiters > 0 or time.monotonic() - self._left_at < _IDLE

    def _report(self, newest: int) -> None:
        with self._cond:
            if newest > self._last:
                self._last = newest
                self._cond.notify_all()

    def _run(self) -> None:
        try:
            while self._keep_going():
                if self._listen is not None and time.monotonic() >= self._listen_after:
                    try:
                        self._listen(self._report, self._keep_going)
                        continue  # it returned: idle or closed
                    except StoreError:
                        self._listen_after = time.monotonic() + _RETRY_LISTEN  # poll meanwhile
                with contextlib.suppress(StoreError):  # unreachable for now: the waiters' own first check reports it
                    self._report(self._newest())
                with self._cond:
                    if not self._closed:
                        self._cond.wait(self._interval)
        finally:
            if self._on_exit is not None:
                self._on_exit()
            with self._cond:
                if self._thread is threading.current_thread():
                    self._thread = None
