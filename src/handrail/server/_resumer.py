"""Runs that resume by themselves: :class:`Resumer` watches a store and continues every decided pause once.

What one pass (:meth:`Resumer.run_once`) does:

1. reads the store's event log after the last event it saw (``events_after``): each ``approval.decided`` or
   ``approval.expired`` names a run to look at, each ``approval.created`` an expiry time to remember (except
   those of another backend, ``backend`` in the event: a Temporal run's approval has no snapshot here, its
   workflow continues by itself once decided and expires it by its own timer);
2. runs the expiry sweep when a remembered expiry time has come (:class:`~handrail.server._expiry.ExpiryWatch`);
3. for each run named, reads the snapshot holding it (``next_step``: its approvals, its held calls): when every
   held call is decided or expired, the run goes to the launcher's worker threads, which resume it with the
   library ``handrail.resume()`` (:mod:`~handrail.server._drive`);
4. every ``takeover_interval`` seconds, takes over the queued and running runs whose claim is free (their process
   died, e.g. ``kill -9`` mid-tool: the call found ``running`` follows ``unknown_outcome``): the runs the ``run.*``
   events or step 3 found under way, a claim attempt each; and looks again at the decided runs step 3 found held
   by another process (``busy``), which no event names again if that process died right after it claimed one;
5. every ``recheck_interval`` seconds, reads again the pending approvals it knows (:mod:`~handrail.server._waiting`):
   a decision whose event was never written (a directory store's process killed between the two) is found so;
6. when it starts, after missing events (the log is bounded) and, if set, every ``rescan_interval`` seconds,
   looks at every paused snapshot instead: it reads each once (a directory store reads every snapshot file) and
   looks further only at those whose calls have no pending approval.

So a pass costs a query of the event log plus a few reads per decision, however many runs are paused (and every
``recheck_interval`` seconds a read per pending approval). Any number of resumers (``handrail serve``, ``handrail
worker``, in any process) may watch one store: a run is driven under its claim (``claim_run``) and resumed under
its snapshot's claim, so each decided pause is continued exactly once. Between passes, :meth:`Resumer.run_forever`
waits on ``store.wait_for_events`` (PostgreSQL: ``LISTEN`` / ``NOTIFY``; SQLite and directories: a short poll),
so a decision wakes it at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from handrail.errors import ApprovalNotFoundError, ConfigurationError, CorruptRecordError
from handrail.server._expiry import ExpiryWatch
from handrail.server._ready import next_step, snapshot_now
from handrail.server._rescan import active_runs, rescan
from handrail.server._runbook import Report, one_line
from handrail.server._runs import RunLauncher
from handrail.server._waiting import ENDED_KINDS, HeldRuns, WaitingApprovals

if TYPE_CHECKING:
    import os
    from types import TracebackType

    from handrail.server._registry import AgentFactory

__all__ = ["PassReport", "Resumer"]

_LOG = logging.getLogger("handrail.server")
_PAGE = 1000


@dataclass(frozen=True, slots=True)
class PassReport:
    """What one pass of the resumer did (:meth:`Resumer.run_once`)."""

    resumed: tuple[str, ...] = ()
    """The runs it sent to be continued (decided pauses, and runs taken over)."""
    took_over: tuple[str, ...] = ()
    """Of those, the queued or running runs whose process had died."""
    expired: tuple[str, ...] = ()
    """The approvals its sweep expired."""
    outcomes: dict[str, str] = field(default_factory=dict)
    """With ``wait``: what happened to each run sent (``finished``, ``paused``, ``failed``, ``busy``, ...)."""


class Resumer:
    """Continues the paused runs of ``store`` whose calls are all decided, and sweeps expired approvals.

    Args:
        store: A snapshot store that keeps approvals and service records (the built-in ones).
        agents: ``{name: factory}``, ``factory(store) -> Agent`` (see :class:`~handrail.server.AgentRegistry`).
        agents_dir: A directory of agent files; only agent files inside it are run.
        allowed_modules: Module prefixes agent files may import from.
        allowed_commands: Programs the agent files' stdio MCP servers may run.
        unknown_outcome: For a call found ``running`` (its process died mid-call): ``fail`` (the default: fail
            closed; the model reads "outcome unknown" and the call is not run twice) or ``retry`` (run it again
            with the same call id; for idempotent tools).
        clock: Returns now (timezone-aware): the expiry sweep's time, the records' times. Tests inject one.
        max_workers: Runs continued at once by this process (the rest wait in its queue).
        launcher: A :class:`~handrail.server.RunLauncher` to share (``handrail serve`` starts runs with it); by
            default one is made from the arguments above.
        report: Told of each change to a run (``handrail worker`` prints a line).
        takeover_interval: Seconds between looks for runs whose process died.
        rescan_interval: Seconds between looks at every paused snapshot, a safety net for a pause no event
            announces (a run resumed by hand that pauses again on calls decided already); None (the default): only
            at the start and after missed events.
        recheck_interval: Seconds between reads of the pending approvals this resumer knows, a safety net for a
            decision whose event was never written (its process died in between); None: never.
        tracing: Trace the runs it continues (the global tracer provider; see :class:`~handrail.server.RunLauncher`).
        tracer_provider: Trace them to this ``TracerProvider`` (implies ``tracing``).

    Raises:
        ConfigurationError / ConfigurationTypeError: As :class:`~handrail.server.RunLauncher` raises them.
    """

    def __init__(
        self,
        store: Any,
        *,
        agents: Mapping[str, AgentFactory] | None = None,
        agents_dir: str | os.PathLike[str] | None = None,
        allowed_modules: Iterable[str] = (),
        allowed_commands: Iterable[str] = (),
        unknown_outcome: str = "fail",
        clock: Callable[[], datetime] | None = None,
        max_workers: int = 4,
        launcher: RunLauncher | None = None,
        report: Report | None = None,
        takeover_interval: float = 2.0,
        rescan_interval: float | None = None,
        recheck_interval: float | None = 10.0,
        tracing: bool = False,
        tracer_provider: Any = None,
    ) -> None:
        from handrail.human_in_the_loop.service import ApprovalService

        _seconds("takeover_interval", takeover_interval)
        for name, value in (("rescan_interval", rescan_interval), ("recheck_interval", recheck_interval)):
            if value is not None:
                _seconds(name, value)
        self._owns_launcher = launcher is None
        self.launcher: RunLauncher = launcher or RunLauncher(
            store, agents=agents, agents_dir=agents_dir, allowed_modules=allowed_modules,
            allowed_commands=allowed_commands,
            unknown_outcome=unknown_outcome, clock=clock, max_workers=max_workers, report=report, tracing=tracing,
            tracer_provider=tracer_provider,
        )  # fmt: skip
        """Drives the runs (and starts new ones: :meth:`RunLauncher.start_run`)."""
        self.store: Any = store
        """The store watched."""
        self.service = ApprovalService(store, clock=self.launcher.clock)
        """The approval service over the store (its sweep)."""
        self.takeover_interval = float(takeover_interval)
        self.rescan_interval = None if rescan_interval is None else float(rescan_interval)
        self.recheck_interval = None if recheck_interval is None else float(recheck_interval)
        self.expiry = ExpiryWatch(self.service)
        self.waiting = WaitingApprovals()
        self.held = HeldRuns()
        self._after: int | None = None
        self._next_takeover = 0.0
        self._next_rescan = 0.0
        self._next_recheck = 0.0
        self._rescan_now = False
        self._active: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- one pass ------------------------------------------------------------------------------------

    def run_once(self, *, wait: bool = True) -> PassReport:
        """One pass (see the module docstring); with ``wait``, returns once the runs it sent have stopped.

        A run's failure is recorded on the run (``failed``, an event, a log line) and never raised here.
        """
        with self._lock:
            sent, took_over, expired = self._pass()
        outcomes: dict[str, str] = {}
        if wait:
            for run_id, future in sent.items():
                outcomes[run_id] = _outcome(future)
        return PassReport(tuple(sent), tuple(took_over), tuple(expired), outcomes)

    def wake(self) -> PassReport:
        """One pass now, in the calling thread, not waiting for the runs it sends (``run_once(wait=False)``).

        For a decision made in this process (the HTTP API's decision route, after it answered): the run is sent at
        once instead of when the loop's wait ends (on SQLite and directories, the next poll of the event log).
        Passes never overlap: this one waits for a pass of the loop under way.
        """
        return self.run_once(wait=False)

    def _pass(self) -> tuple[dict[str, Future[str]], list[str], list[str]]:
        now = time.monotonic()
        named: dict[str, str | None] = {}
        if self._after is None:  # the start: everything that happened before is found by a scan
            self._after = self.store.events_after(0, limit=1).last_id
            self.expiry.rebuild()
            self._rescan_now = True
        else:
            self._read_events(named)
        expired = self.expiry.sweep(self.launcher.clock())
        named.update((approval.run_id, approval.snapshot_id) for approval in expired)
        named.update(self._looked_again(now))
        sent = self._considered(named)
        took_over: list[str] = []
        if now >= self._next_takeover:
            self._next_takeover = now + self.takeover_interval
            sent.update(self._considered(self.held.take()))
            for run_id, future in self._take_over().items():
                sent[run_id] = future
                took_over.append(run_id)
        return sent, took_over, [a.id for a in expired]

    def _looked_again(self, now: float) -> dict[str, str | None]:
        """The runs of a rescan or of a recheck of the waiting approvals, when one is due."""
        if self._rescan_now or (self.rescan_interval is not None and now >= self._next_rescan):
            self._rescan_now = False
            self._next_rescan = now + (self.rescan_interval or 0.0)
            self._next_recheck = now + (self.recheck_interval or 0.0)
            self._active = active_runs(self.store)
            return rescan(self.store, self.service, self.waiting)
        if self.recheck_interval is not None and now >= self._next_recheck:
            self._next_recheck = now + self.recheck_interval
            return self.waiting.recheck(self.store)
        return {}

    def _considered(self, named: dict[str, str | None]) -> dict[str, Future[str]]:
        sent: dict[str, Future[str]] = {}
        for run_id, snapshot_id in named.items():
            future = self._consider(run_id, snapshot_id)
            if future is not None:
                sent[run_id] = future
        return sent

    def _read_events(self, named: dict[str, str | None]) -> None:
        """Read the log after the last event seen: the runs decisions name, the expiry times of new approvals."""
        assert self._after is not None
        while True:
            page = self.store.events_after(self._after, limit=_PAGE)
            if page.gap:  # events were dropped before they were read: look at everything instead
                _LOG.info("the event log moved past event %s: looking at every paused run", self._after)
                self._after = page.last_id
                self.expiry.rebuild()
                self._rescan_now = True
                return
            for event in page.events:
                self._note_run(event)
                approval_id = event.data.get("approval_id")
                run_id = event.data.get("run_id")
                if not isinstance(approval_id, str) or not isinstance(run_id, str):
                    continue
                if event.data.get("backend", "local") != "local":
                    continue  # a Temporal run's approval: its workflow goes on by itself, nothing to resume here
                if event.kind == "approval.created":
                    self.expiry.note(approval_id)
                    self.waiting.note(approval_id, run_id)
                elif event.kind in ENDED_KINDS:
                    self.waiting.forget(approval_id)
                    if event.kind != "approval.cancelled":
                        named[run_id] = self._snapshot_of(approval_id)
            if page.events:
                self._after = page.events[-1].id
            if len(page.events) < _PAGE:
                return

    def _note_run(self, event: Any) -> None:
        """Keep :attr:`_active` (the runs queued or running) from the ``run.*`` events."""
        run_id = event.data.get("run_id")
        if not event.kind.startswith("run.") or not isinstance(run_id, str):
            return
        if event.data.get("status") in ("queued", "running"):
            self._active.add(run_id)
        else:
            self._active.discard(run_id)

    def _snapshot_of(self, approval_id: str) -> str | None:
        try:
            snapshot_id: str = self.store.get_approval(approval_id).snapshot_id
        except (ApprovalNotFoundError, CorruptRecordError):
            return None
        return snapshot_id

    def _consider(self, run_id: str, snapshot_id: str | None) -> Future[str] | None:
        """Send the run to be continued when its paused snapshot's calls are all decided (or being written)."""
        if run_id in self.launcher.in_flight():
            return None
        record = self.launcher.book.get(run_id)
        if record is not None:
            if record.status in ("queued", "running"):
                self._active.add(run_id)  # its driver sees to it, or the takeover (its process may have died
                return None  # before the event that says it is under way)
            if record.status != "paused":
                return None  # ended: nothing to do
            snapshot_id = record.snapshot_id or snapshot_id
        found = next_step(self.store, snapshot_now(self.store, snapshot_id))
        moved = found.snapshot is not None and found.snapshot.snapshot_id != snapshot_id
        if record is not None and (found.step == "done" or (moved and found.step == "wait")):
            return self.launcher.continue_run(run_id, snapshot_id)  # its driver records where the run went
        if found.approval_pause and found.step in ("resume", "sync"):
            assert found.snapshot is not None
            future = self.launcher.continue_run(run_id, found.snapshot.snapshot_id)
            if future is not None:
                self.held.watch(run_id, snapshot_id, future)
            return future
        return None

    def _take_over(self) -> dict[str, Future[str]]:
        """Continue the queued and running runs whose claim is free (their process died).

        The runs looked at are those the event log says are queued or running (``run.started``, ``run.resumed``;
        ``run.paused`` / ``finished`` / ``failed`` end that), listed from the store at the start and after a
        rescan, so a look costs one claim attempt per active run, not a read of every run record.
        """
        sent: dict[str, Future[str]] = {}
        flying = self.launcher.in_flight()
        for run_id in sorted(self._active - flying):
            lease = self.store.claim_run(run_id)
            if lease is None:
                continue
            record = self.launcher.book.get(run_id)
            if record is None or record.status not in ("queued", "running"):
                lease.release()
                self._active.discard(run_id)
                continue
            future = self.launcher.continue_run(run_id, lease=lease)
            if future is not None:
                sent[run_id] = future
        return sent

    # -- the loop ------------------------------------------------------------------------------------

    def run_forever(self, stop: threading.Event | None = None, *, max_wait: float = 1.0) -> None:
        """Pass after pass until ``stop`` is set (default: :meth:`stop` was called), waiting for events between.

        A decision wakes it at once (``store.wait_for_events``), the next expiry time when it comes; it waits at
        most ``max_wait`` seconds, so it notices ``stop`` within that. An error of a pass (the store unreachable)
        is logged and the next pass tried a little later: it never ends the loop.
        """
        stop = stop or self._stop
        failures = 0
        while not stop.is_set():
            try:
                self.run_once(wait=False)
                failures = 0
                self.store.wait_for_events(self._after or 0, timeout=self._timeout(max_wait))
            except Exception as exc:  # the store failed: logged, tried again (no pass may end the service)
                failures += 1
                _LOG.warning("the resumer's pass failed (%d in a row): %s", failures, one_line(exc))
                stop.wait(min(max_wait * failures, 30.0))

    def _timeout(self, max_wait: float) -> float:
        now = time.monotonic()
        timeout = min(max_wait, max(0.0, self._next_takeover - now))
        looks = ((self.rescan_interval, self._next_rescan), (self.recheck_interval, self._next_recheck))
        for interval, due_at in looks:
            if interval is not None:
                timeout = min(timeout, max(0.0, due_at - now))
        due = self.expiry.next_due()
        if due is not None:
            timeout = min(timeout, max(0.0, (due - self.launcher.clock()).total_seconds()))
        return timeout

    def start(self) -> None:
        """Run :meth:`run_forever` in a background thread (until :meth:`stop`)."""
        if self._thread is not None and self._thread.is_alive():
            raise ConfigurationError("This Resumer is running already.")
        self._stop.clear()
        self._thread = threading.Thread(target=self.run_forever, name="handrail-resumer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the loop; the runs this process is continuing are finished (or paused) first, queued ones dropped.

        The launcher is closed when the resumer made it (one given is left to its owner).
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if self._owns_launcher:
            self.launcher.close(wait=True)

    def __enter__(self) -> Resumer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


def _outcome(future: Future[str]) -> str:
    try:
        return future.result()
    except Exception as exc:  # a bug or a store failure while recording: logged by the launcher too
        return f"error: {one_line(exc)}"


def _seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"{name} must be a number of seconds > 0, got {value!r:.40}.")
