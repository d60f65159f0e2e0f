"""Starting runs in the service and reading them back: :class:`RunLauncher` (``POST`` / ``GET /api/v1/runs``).

:meth:`RunLauncher.start_run` starts a run of a named agent durably before it answers: the run is taken to its
first snapshot in the store at once (a pause before its first model call, written by the library's own
breakpoint, ``AgentBreakpoint(agent_name, Breakpoint("chat_generator", 0))``), whose id is the run's id — so
the run id of every later snapshot and of every approval is the :class:`~handrail.dataclasses.service.RunRecord`'s
id. That snapshot's metadata gets ``initiator`` (the principal's name) and ``agent_name``; the record
(``queued``, with the input) is written, ``run.started`` appended, and the run goes to the process's worker
threads (a bounded pool; runs beyond it wait in its queue) holding the run's claim. From there on it is driven
as every service run is (:mod:`~handrail.server._drive`): ``running``, ``paused`` with the snapshot to resume
when a call needs a person, ``finished`` with the result, or ``failed`` with a one-line reason. A paused run is
resumed by the resumer of any process sharing the store once its calls are decided; a queued or running run
whose process died (its claim free) is taken over by another.

Input is checked before anything is written: the agent name, the messages (user, system or assistant text; no
tool calls or tool results: a run's tool results are its own), the state inputs (JSON data, keys of the agent's
state schema: the agent refuses others).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from handrail.dataclasses.approval import Approval
from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.dataclasses.service import Principal, RunRecord
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.server._drive import Driver
from handrail.server._registry import AGENT_NAME_KEY, AgentFactory, AgentRegistry
from handrail.server._runbook import INITIATOR_KEY, Report, RunBook

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

__all__ = ["UNKNOWN_OUTCOMES", "RunLauncher", "RunView"]

UNKNOWN_OUTCOMES = ("fail", "retry")
"""What a resumed call found ``running`` becomes: ``fail`` (the default: an error result "outcome unknown" the
model reads; the call is not run twice) or ``retry`` (run again with the same call id: for idempotent tools)."""
_MAX_MESSAGES = 1000


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as ``GET /api/v1/runs/{id}`` shows it (:meth:`RunLauncher.get_run`)."""

    record: RunRecord
    """The run's record: status, snapshot, result or error."""
    pending: tuple[Approval, ...]
    """Its approvals waiting for a decision, newest first (empty unless it is paused)."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


class RunLauncher:
    """Starts, drives and reads the service's runs in ``store`` (see the module docstring).

    Args:
        store: A snapshot store that keeps approvals and service records (the built-in ones).
        agents: ``{name: factory}``: ``factory(store) -> Agent`` (see :class:`~handrail.server.AgentRegistry`).
        agents_dir: A directory of agent files ``<name>.yaml`` (only files inside it are accepted).
        allowed_modules: Module prefixes agent files may import from.
        allowed_commands: Programs the agent files' stdio MCP servers may run.
        registry: An :class:`AgentRegistry` to use instead of ``agents`` / ``agents_dir`` / ``allowed_modules`` /
            ``allowed_commands``.
        unknown_outcome: ``fail`` (default) or ``retry``: see :data:`UNKNOWN_OUTCOMES`.
        clock: Returns now (timezone-aware): the records' and events' times.
        max_workers: Runs driven at once in this process (the rest wait in the pool's queue).
        report: Told of each change to a run (``handrail worker`` prints a line).
        tracing: Trace the runs (OpenTelemetry, ``pip install 'handrail[tracing]'``) with the global tracer provider:
            :func:`handrail.tracing.enable` is called, for the process.
        tracer_provider: Trace the runs to this ``TracerProvider`` instead (each agent the service builds gets it,
            unless it has one of its own); implies ``tracing``. A resumed run continues the trace of its pause
            (docs/approval-service.md, "Tracing in the service").

    Raises:
        ConfigurationError / ConfigurationTypeError: A store without approval or service records, a bad setting,
            an agent that does not pause into the store (named).
    """

    def __init__(
        self,
        store: Any,
        *,
        agents: Mapping[str, AgentFactory] | None = None,
        agents_dir: str | os.PathLike[str] | None = None,
        allowed_modules: Iterable[str] = (),
        allowed_commands: Iterable[str] = (),
        registry: AgentRegistry | None = None,
        unknown_outcome: str = "fail",
        clock: Callable[[], datetime] | None = None,
        max_workers: int = 4,
        report: Report | None = None,
        tracing: bool = False,
        tracer_provider: Any = None,
    ) -> None:
        from handrail.server._tracing import service_tracing

        check_service_store(store)
        if unknown_outcome not in UNKNOWN_OUTCOMES:
            raise ConfigurationError(f"unknown_outcome must be 'fail' or 'retry', got {unknown_outcome!r:.40}.")
        if type(max_workers) is not int or not 1 <= max_workers <= 256:
            raise ConfigurationError(f"max_workers must be an int from 1 to 256, got {max_workers!r:.40}.")
        if clock is not None and not callable(clock):
            raise ConfigurationTypeError(f"clock must be a callable returning now, got {type(clock).__name__}.")
        self.store: Any = store
        """The service's store."""
        self.registry: AgentRegistry = registry or AgentRegistry(
            store, agents=agents, agents_dir=agents_dir, allowed_modules=allowed_modules,
            allowed_commands=allowed_commands,
        )  # fmt: skip
        """The agents runs are started and resumed with."""
        self.clock: Callable[[], datetime] = clock or _utc_now
        """Returns now."""
        self.book = RunBook(store, self.clock, report)
        self.tracing = service_tracing(tracing, tracer_provider)
        """The runs' tracing (None: off)."""
        self.driver = Driver(store, self.registry, self.book, unknown_outcome, tracing=self.tracing)
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="handrail-run")
        self._flight: dict[str, Future[str]] = {}
        self._lock = threading.Lock()
        self._closed = False

    @property
    def unknown_outcome(self) -> str:
        """``fail`` or ``retry``: what a resumed call found ``running`` becomes."""
        return self.driver.unknown_outcome

    def start_run(
        self,
        agent_name: str,
        messages: Sequence[ChatMessage | Mapping[str, Any] | str],
        *,
        state: Mapping[str, Any] | None = None,
        initiator: str | Principal | None = None,
    ) -> RunRecord:
        """Start a run of ``agent_name`` with ``messages`` (and state inputs) and return its record (``queued``).

        Args:
            agent_name: A name of the registry (a factory, or an agent file of ``agents_dir``).
            messages: The input: ChatMessage objects, their dicts (``ChatMessage.to_dict``), or plain text (a
                user message); user, system or assistant text only.
            state: State inputs (JSON data), keys of the agent's state schema.
            initiator: Who starts it (the authenticated principal; recorded, and in the snapshots' metadata).

        Returns:
            The record; its ``run_id`` is the id every snapshot and approval of the run carries.

        Raises:
            UnknownAgentError: No agent of that name. ConfigurationError / ConfigurationTypeError: Bad messages or
                state (named), refused before anything is written. RuntimeError: The launcher is closed.
        """
        from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint, BreakpointException

        agent, metadata = self.registry.agent_named(agent_name)
        if self.tracing is not None:
            agent = self.tracing.traced(agent)
        history = _messages(messages)
        inputs = _state(state)
        who = initiator.name if isinstance(initiator, Principal) else initiator
        if who is not None and (not isinstance(who, str) or not who.strip()):
            raise ConfigurationError(f"initiator must be a principal or a non-empty name, got {who!r:.80}.")
        if self._closed:
            raise RuntimeError("This RunLauncher is closed; it starts no more runs.")
        try:
            agent.run(history, break_point=AgentBreakpoint(metadata[AGENT_NAME_KEY], Breakpoint("chat_generator", 0)),
                      **inputs)  # fmt: skip
        except BreakpointException as first:
            snapshot_id = first.snapshot.snapshot_id if first.snapshot is not None else None
        else:  # pragma: no cover - a breakpoint at visit 0 always stops the run before its first model call
            raise RuntimeError(f"The agent {agent_name!r} did not stop at its first model call.")
        assert snapshot_id is not None
        self._annotate(snapshot_id, {**metadata, INITIATOR_KEY: who})
        now = self.clock()
        record = RunRecord(
            run_id=snapshot_id, agent_name=metadata[AGENT_NAME_KEY], status="queued", created_at=now, updated_at=now,
            initiator=who, input={"messages": [m.to_dict() for m in history], "state": inputs}, snapshot_id=snapshot_id,
        )  # fmt: skip
        created = self.book.create(record)
        lease = self.store.claim_run(created.run_id)
        if lease is not None:
            self.continue_run(created.run_id, lease=lease)
        return created

    def _annotate(self, snapshot_id: str, extra: Mapping[str, Any]) -> None:
        """Add ``extra`` to the metadata of a run's first snapshot (paused, so nobody else writes it now)."""
        with self.store.claim(snapshot_id):
            snapshot = self.store.load(snapshot_id)
            metadata = {**snapshot.metadata, **{k: v for k, v in extra.items() if v is not None}}
            self.store.replace(snapshot_id, dataclasses.replace(snapshot, metadata=metadata))

    def get_run(self, run_id: str) -> RunView:
        """The run's record and its pending approvals.

        Raises:
            RunNotFoundError: No such run.
        """
        from handrail.stores.approvals import ApprovalFilter

        record: RunRecord = self.store.get_run(run_id)
        pending: tuple[Approval, ...] = ()
        if record.status == "paused":
            page = self.store.list_approvals(ApprovalFilter(run_id=run_id, status="pending"), limit=100)
            pending = tuple(page.items)
        return RunView(record, pending)

    def continue_run(self, run_id: str, snapshot_id: str | None = None, *, lease: Any = None) -> Future[str] | None:
        """Drive run ``run_id`` in a worker thread (see :mod:`~handrail.server._drive`).

        Nothing is sent (None) when the run is queued or running in this process already, or the launcher is closed.

        Args:
            run_id: The run.
            snapshot_id: Its paused snapshot, for a run the service has no record of yet.
            lease: The run's claim, if the caller holds it (it is released when the run stops here).

        Returns:
            The future of what happened (``finished``, ``paused``, ``waiting``, ``failed``, ``busy``, ...).
        """
        with self._lock:
            if self._closed or run_id in self._flight:
                if lease is not None:
                    lease.release()
                return None
            future = self._pool.submit(self.driver.drive, run_id, snapshot_id, lease)
            self._flight[run_id] = future
        future.add_done_callback(lambda _: self._landed(run_id, future, lease))
        return future

    def _landed(self, run_id: str, future: Future[str], lease: Any) -> None:
        with self._lock:
            if self._flight.get(run_id) is future:
                del self._flight[run_id]
        if future.cancelled() and lease is not None:
            lease.release()  # never started (the launcher closed): the run is taken over by another process

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no run is queued or running in this process (True), or ``timeout`` seconds passed (False).

        A run that paused for approval is not running: ``start_run`` then ``wait()`` returns once the run paused
        (or finished), and :meth:`get_run` shows its pending approvals.
        """
        from concurrent.futures import wait as wait_all

        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                flying = [f for f in self._flight.values() if not f.done()]
            if not flying:
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            wait_all(flying, timeout=left)

    def in_flight(self) -> set[str]:
        """The runs queued or running in this process now."""
        with self._lock:
            return set(self._flight)

    def close(self, *, wait: bool = True) -> None:
        """Start no more runs; drop the queued ones and, with ``wait``, wait for the running ones.

        A dropped run's claim is released: another process takes it over.
        """
        with self._lock:
            self._closed = True
        self.driver.stopping.set()
        self._pool.shutdown(wait=wait, cancel_futures=True)


def check_service_store(store: object) -> None:
    """Refuse a store without approval records or service records (runs, events).

    Raises:
        ConfigurationTypeError: Naming what the store lacks.
    """
    from handrail.stores.approvals import ApprovalStore
    from handrail.stores.service import ServiceStore

    for protocol, what in ((ApprovalStore, "approval records"), (ServiceStore, "service records (runs, events)")):
        if not isinstance(store, protocol):
            raise ConfigurationTypeError(
                f"The service needs a store that keeps {what} (the built-in snapshot stores: a directory, SQLite, "
                f"PostgreSQL); {type(store).__name__} does not."
            )


def _messages(messages: object) -> list[ChatMessage]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise ConfigurationTypeError(f"messages must be a list of messages, got {type(messages).__name__}.")
    if not 1 <= len(messages) <= _MAX_MESSAGES:
        raise ConfigurationError(f"messages must hold 1 to {_MAX_MESSAGES} messages, got {len(messages)}.")
    return [_message(index, item) for index, item in enumerate(messages)]


def _message(index: int, item: object) -> ChatMessage:
    if isinstance(item, str):
        return ChatMessage.from_user(item)
    if isinstance(item, Mapping):
        try:
            item = ChatMessage.from_dict(dict(item))
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigurationError(f"messages[{index}] is not a chat message: {exc}") from None
    if not isinstance(item, ChatMessage):
        kind = type(item).__name__
        raise ConfigurationTypeError(f"messages[{index}] must be a ChatMessage, a dict or text, got {kind}.")
    if item.role is ChatRole.TOOL or item.tool_calls or item.tool_call_results:
        raise ConfigurationError(
            f"messages[{index}] holds tool calls or tool results; a run's input is user, system or assistant text "
            "(the run's tool results are its own)."
        )
    return item


def _run_parameters() -> frozenset[str]:
    import inspect

    from handrail.components.agents.agent import Agent
    from handrail.dataclasses.state import RESERVED_KEYS

    return frozenset(inspect.signature(Agent.run).parameters) | frozenset(RESERVED_KEYS) | {"self", "kwargs"}


def _state(state: object) -> dict[str, Any]:
    """State inputs: JSON data under names that are neither ``Agent.run`` parameters nor reserved state keys.

    (A client's ``{"snapshot": ...}`` or ``{"tools": ...}`` would otherwise reach the run as a parameter; names the
    agent does not know are refused by the agent itself, before anything is written.)
    """
    if state is None:
        return {}
    if not isinstance(state, Mapping):
        raise ConfigurationTypeError(f"state must be a mapping of state keys to values, got {type(state).__name__}.")
    refused = _run_parameters()
    for key in state:
        if not isinstance(key, str) or not key:
            raise ConfigurationError(f"state keys must be non-empty str, got {key!r:.80}.")
        if key in refused:
            raise ConfigurationError(f"state key {key!r} is not a state input (a run parameter or a reserved key).")
    try:
        loaded: dict[str, Any] = json.loads(json.dumps(dict(state), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"state must hold JSON data only: {exc}") from None
    return loaded
