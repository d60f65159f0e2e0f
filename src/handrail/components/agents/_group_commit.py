"""Group commit for the durable ledger: one store write covers every change made before it began.

A durable run must write a call's ``running`` entry before the call starts and its result before the step ends,
so that a resumed run never runs a call twice.
Written one change at a time, a step of n calls costs 2n writes of the whole record. Here a
change gets a ticket (a version number); waiting for a ticket either finds it covered by a write that already
ended, or waits for the write under way and then writes everything recorded meanwhile in one go. Calls that
start or finish together (the threads of a sync step, the tasks of an async one) thus share their writes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["GroupCommit"]


class GroupCommit:
    """Versions of a changing record and the write that makes them durable.

    Args:
        write: Writes the record as it is now (it includes every change whose ticket was given before the call).

    Thread-safe; :meth:`wait` must not be called while holding a lock that ``write`` takes.
    """

    def __init__(self, write: Callable[[], None]) -> None:
        self._write = write
        self._cond = threading.Condition(threading.Lock())
        self._version = 0
        self._durable = 0
        self._writing = False
        self.writes = 0
        """How many writes were made (for tests and benchmarks)."""

    def ticket(self) -> int:
        """Count a change (already made to the record in memory); returns its ticket for :meth:`wait`."""
        with self._cond:
            self._version += 1
            return self._version

    def wait(self, ticket: int) -> None:
        """Return once the change of ``ticket`` is durable, writing it (with every other change so far) if need be.

        Raises:
            Exception: What ``write`` raised, when this caller's own write failed (a change that a failed write
                should have covered is written again by its own waiter, which raises in turn if that fails).
        """
        with self._cond:
            while self._durable < ticket:
                if self._writing:
                    self._cond.wait()
                    continue
                self._writing = True
                covered = self._version
                written = False
                self._cond.release()
                try:
                    self._write()
                    written = True
                finally:
                    self._cond.acquire()
                    self._writing = False
                    if written:
                        self.writes += 1
                        self._durable = max(self._durable, covered)
                    self._cond.notify_all()
