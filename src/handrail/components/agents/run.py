"""One Agent run as a state machine: what ``Agent.start`` returns and a driver drives.

``run.send(result)`` returns the run's next effect (:mod:`handrail.components.effects`), or None once the run
ended; ``run.context`` executes any effect with the run's live objects (its chat generator, tools, strategies,
hooks, stores). ``Agent.run`` is this run driven by :class:`~handrail.components.drivers.SyncDriver`,
``run_async`` by :class:`~handrail.components.drivers.AsyncDriver`. Close a run you drive yourself (``with``,
or :meth:`AgentRun.close`): a run resumed from a stored snapshot holds a claim on its record until then.
"""

from __future__ import annotations

import time
import weakref
from typing import TYPE_CHECKING, Any

from handrail.components.agents._context import AgentContext, release_checkpoints
from handrail.components.agents._machine import agent_machine
from handrail.components.drivers import Ended, RunInfo, notify_run_ended, notify_run_started
from handrail.components.effects import Effect, Pause
from handrail.errors import RunError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    from handrail.components.agents._plan import Started
    from handrail.components.drivers import RunObserver
    from handrail.dataclasses.chat_message import ChatMessage

__all__ = ["AgentRun"]


class AgentRun:
    """An Agent run: send each effect's result, get the next effect.

    Made by :meth:`Agent.start <handrail.components.agents.agent.Agent.start>`, which checked every argument
    (a bad one raised there, before any effect).
    """

    __slots__ = ("__weakref__", "_began", "_closed", "_context", "_ended", "_error", "_failed", "_info", "_machine",
                 "_paused", "_started", "_stop", "_sync")  # fmt: skip

    def __init__(self, started: Started, observers: Sequence[RunObserver] = (), *, sync: bool = True) -> None:
        self._started = started
        self._context = AgentContext(started.plan, started.parts, started.run, started.model, observers)
        self._machine = agent_machine(started.plan, started.parts, started.run)
        self._sync = sync
        self._ended = False
        self._closed = False
        self._paused = False
        self._failed: BaseException | None = None
        self._stop = False
        """True once send has nothing more to give: the run ended, paused, failed or was closed."""
        self._error: BaseException | None = None
        """What stopped the run, as the caller's ``with`` block saw it (a breakpoint exception for a pause)."""
        if started.parts.checkpoints is not None:  # a run dropped without close() still lets go of its claim
            weakref.finalize(self, release_checkpoints, started.parts.checkpoints)
        self._info: RunInfo | None = None
        self._began = 0.0
        if observers:
            self._info = run_info(started)
            notify_run_started(observers, self._info)
            self._began = time.monotonic()

    @property
    def context(self) -> AgentContext:
        """Executes effects of this run (one method per kind of effect, sync and async)."""
        return self._context

    @property
    def ended(self) -> bool:
        """True once :meth:`send` returned None."""
        return self._ended

    def send(self, result: Any = None) -> Effect | None:
        """Give the result of the last effect (None for the first call); returns the next effect, None at the end.

        Raises:
            RunError: The run is closed, or its last effect was a ``Pause`` (a pause ends the run: resume it from
                its snapshot).
            Exception: What the loop's rules raise for a result (e.g. a decision for the wrong call).
        """
        if self._stop:
            self._refuse_if_stopped()
            return None
        try:
            effect = self._machine.send(result)
        except StopIteration:
            self._ended = self._stop = True
            if self._sync:
                self.close()  # nothing holds the claim past the end (an async run's aclose does it off the loop)
            return None
        except BaseException as exc:  # the loop's rules refused the result: the run cannot go on
            self._failed, self._stop = exc, True
            raise
        if type(effect) is Pause:
            self._stop = self._paused = True
        return effect

    def _refuse_if_stopped(self) -> None:
        if self._failed is not None:
            raise RunError(
                f"This run failed ({type(self._failed).__name__}: {self._failed}); it cannot go on: start a new "
                f"one, or resume its last snapshot."
            ) from self._failed
        if self._closed and not self._ended:
            raise RunError("This run is closed; start a new one.")
        if self._paused:
            raise RunError("A Pause effect ends the run; resume it from its snapshot (Agent.run(snapshot=...)).")

    @property
    def messages(self) -> list[ChatMessage]:
        """The history so far (the run's live list)."""
        messages: list[ChatMessage] = self._started.run.state.data["messages"]
        return messages

    @property
    def result(self) -> dict[str, Any]:
        """The run's result, as ``Agent.run`` returns it.

        Raises:
            RunError: The run has not ended.
        """
        if not self._ended:
            self._refuse_if_stopped()
            raise RunError("The run has not ended: send the results of its effects until send() returns None.")
        data = self._started.run.state.data
        messages = data["messages"]
        result: dict[str, Any] = {"messages": messages}
        if messages:
            result["last_message"] = messages[-1]
        result.update(self._started.run.state.user_values())
        for key in ("step_count", "token_usage", "tool_call_counts", "exit_reason"):
            result[key] = data[key]
        return result

    def close(self) -> None:
        """Release what the run holds (the claim on a resumed record, a store it opened); idempotent."""
        if self._closed:
            return
        try:
            self._release()
        finally:
            self._run_ended()

    def _release(self) -> None:
        self._closed = self._stop = True
        self._machine.close()
        self._context.release()

    def _run_ended(self) -> None:
        """Tell the observers how the run ended (once; in the thread or task that closes the run)."""
        info, self._info = self._info, None
        if info is None:
            return
        error = self._error or self._failed
        if self._ended:
            info.outcome, result = "done", self.result
        else:
            info.outcome, result = ("paused" if self._paused and _is_pause(error) else
                                    "failed" if error is not None else "closed"), None  # fmt: skip
        notify_run_ended(self._context.observers, info, Ended(time.monotonic() - self._began, result, error))

    async def aclose(self) -> None:
        """:meth:`close` with the store I/O in a worker thread."""
        if self._closed:
            return
        if self._started.parts.checkpoints is None:
            self.close()
            return
        from handrail.components.tools._execution import in_thread_unsplit

        try:
            await in_thread_unsplit(self._release)
        finally:
            self._run_ended()  # on the event loop, as run_started was: not in the worker thread

    def __enter__(self) -> AgentRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if error is not None and self._error is None:
            self._error = error
        self.close()

    async def __aenter__(self) -> AgentRun:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if error is not None and self._error is None:
            self._error = error
        await self.aclose()


def _is_pause(error: BaseException | None) -> bool:
    from handrail.dataclasses.breakpoints import BreakpointException

    return isinstance(error, BreakpointException)


def run_info(started: Started) -> RunInfo:
    """What the run's observers are told about it (made only for a run that has observers)."""
    import uuid

    parts, run = started.parts, started.run
    cp = parts.checkpoints
    resumed = cp.last if cp is not None else None
    carried: dict[str, Any] = {}
    if resumed is not None:
        carried_value = resumed.metadata.get("observers")
        carried = dict(carried_value) if isinstance(carried_value, dict) else {}
    ledger = run.ledger if resumed is not None else None
    stores = parts.stores
    chat = getattr(stores, "chat_kwargs", None) or {}
    conversation = chat.get("chat_history_id") if isinstance(chat, dict) else None

    def carry(key: str, value: Any) -> None:
        assert cp is not None
        slot = cp.metadata.get("observers")
        if not isinstance(slot, dict):
            slot = cp.metadata["observers"] = {}
        slot[key] = value

    return RunInfo(
        agent_name=cp.agent_name if cp is not None else "",
        generator=started.model.generator,
        resumed_from=resumed.snapshot_id if resumed is not None else None,
        snapshot=resumed,
        carried_in=carried,
        conversation_id=conversation if isinstance(conversation, str) else None,
        local_id=uuid.uuid4().hex,
        decisions=tuple(ledger.decisions) if ledger is not None else (),
        resumed_ledger=ledger.snapshot_entries() if ledger is not None else {},
        _durable_id=(lambda: cp.run_id) if cp is not None else (lambda: None),
        _carry=carry if cp is not None else None,
        _messages=lambda: run.state.data["messages"],
        _describe=lambda name: _describe(started, name),
        streaming=started.model.callback is not None,
        _redact=_redaction(started),
    )


def _redaction(started: Started) -> Callable[[str], str] | None:
    """The masking of the run's redaction hooks, applied in their order (None: the run has none)."""
    from handrail.hooks.redaction import redaction_of

    hooks = started.plan.hooks
    points = ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")
    return redaction_of(h for point in points for h in getattr(hooks, point))


def _describe(started: Started, name: str) -> str | None:
    tool = started.plan.static_by_name.get(name) or next((t for t in started.run.offered if t.name == name), None)
    description = getattr(tool, "description", None)
    return description if isinstance(description, str) else None
