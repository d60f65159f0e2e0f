"""PostgreSQL's ``LISTEN`` for the event log: one dedicated connection per watching store object.

Every transaction that appends events runs ``SELECT pg_notify('handrail_events', '<last id>')`` before it
commits; the server delivers the notification at the commit (never for a rolled-back one) to every session
listening on the channel, on every machine. The listener of an
:class:`~handrail.stores._events.EventWatcher` holds one connection of its own (not a pooled one: a pooled
connection is reset between uses), in autocommit mode, ``LISTEN``s, then reads the newest id (so an event
committed before the ``LISTEN`` is not missed) and reports every notification's id as it arrives.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from handrail.errors import StoreError
from handrail.stores._events import Listen

__all__ = ["CHANNEL", "event_listener"]

CHANNEL = "handrail_events"
"""The notification channel of the event log."""
_WAKE = 0.25
"""Seconds the listener waits for a notification before it checks whether it should go on."""


def event_listener(dsn: str, where: str, *, connect_timeout: float) -> Listen:
    """A :data:`~handrail.stores._events.Listen` on ``dsn`` (``where``: the store, for errors)."""

    def listen(report: Callable[[int], None], keep_going: Callable[[], bool]) -> None:
        import psycopg

        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=max(2, round(connect_timeout))) as conn:
                conn.execute(f"LISTEN {CHANNEL}")
                row = conn.execute("SELECT MAX(id) FROM handrail_events").fetchone()
                report(int(row[0] or 0) if row else 0)
                while keep_going():
                    for note in conn.notifies(timeout=_WAKE):
                        with contextlib.suppress(ValueError):  # a payload not ours (another client's NOTIFY)
                            report(int(note.payload))
        except psycopg.Error as exc:
            raise StoreError(f"{where}: the event listener's connection failed: {exc}") from exc

    return listen
