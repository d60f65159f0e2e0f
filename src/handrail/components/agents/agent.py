"""The Agent: a chat model that calls tools in a loop until an exit condition holds."""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from handrail.components.agents import _config as cfg
from handrail.components.agents import _warm
from handrail.components.agents._dicts import agent_init_parameters, agent_to_dict
from handrail.components.agents._machine import HookTable
from handrail.components.agents._plan import RunRequest, start_run
from handrail.components.agents._prompt import check_user_prompt
from handrail.components.agents._sockets import SOCKET_ATTRIBUTES, given_arguments, refresh_sockets
from handrail.components.agents.run import AgentRun
from handrail.components.drivers import AsyncDriver, RunObserver, SyncDriver, factories_apply, observers_from_factories
from handrail.components.generators.types import ChatGenerator
from handrail.core._threads import FreshLockOnCopy
from handrail.core.component import component
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import StreamingCallback
from handrail.errors import ConfigurationTypeError
from handrail.hooks.types import Hook
from handrail.human_in_the_loop.types import ConfirmationStrategy
from handrail.stores.types import ChatMessageStore, MemoryStore
from handrail.tools._lifecycle import aclose_objects, close_objects, objects_to_close
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

__all__ = ["Agent"]


def _hook_table(hooks: Mapping[str, Sequence[Hook]] | None) -> HookTable:
    """Validate the ``hooks`` mapping and freeze it into a per-point table."""
    if not hooks:
        return HookTable()
    from handrail.hooks import validate_hooks

    normalized = validate_hooks(hooks)
    return HookTable(**{point: tuple(items) for point, items in normalized.items() if items})


_RUN_PARAMETERS = frozenset(
    {f.name for f in dataclasses.fields(RunRequest)} - {"sync_run", "kwargs"} | {"observers", "recorder"}
)
"""The parameters of ``run`` / ``run_async`` / ``start`` (named as RunRequest's fields), besides state keys."""


def _request(agent: Agent, sync_run: bool, arguments: dict[str, Any]) -> tuple[RunRequest, list[RunObserver]]:
    """The request of one run from the run method's parameters (``arguments``: its locals, by parameter name)."""
    kwargs = given_arguments(agent, arguments.pop("kwargs"))
    arguments.pop("self", None)
    given = arguments.pop("observers")
    recorder = arguments.pop("recorder", None)
    provider = agent.tracer_provider
    made = factories_apply() or provider is not None
    checked = type(given) is not tuple or given or agent.observers or made
    every = [*agent.observers, *cfg.check_observers(given, "observers")] if checked else []  # () costs nothing
    if made:
        every.extend(_made_observers(provider))
    if recorder is not None:
        every.append(_recorder(agent, recorder, {**arguments, "kwargs": kwargs}))
    return RunRequest(sync_run=sync_run, kwargs=kwargs, **arguments), every


def _recorder(agent: Agent, recorder: Any, arguments: dict[str, Any]) -> RunObserver:
    """The run's recorder (a path: a new ``handrail.tracing.recording.Recorder``), told the run's arguments."""
    if isinstance(recorder, str | os.PathLike):
        # handrail.tracing sits above the components: the recording module is loaded by name, as a plugin.
        recorder = importlib.import_module("handrail.tracing.recording").Recorder(recorder)
    begin = getattr(recorder, "begin_request", None)
    if not callable(begin):
        raise ConfigurationTypeError(
            f"recorder must be a path or a handrail.tracing.recording.Recorder, got {type(recorder).__name__}."
        )
    begin(agent, arguments)
    checked: RunObserver = cfg.check_observers([recorder], "recorder")[0]
    return checked


def _made_observers(provider: Any) -> list[RunObserver]:
    """The registered factories' observers, and the tracing observer of the Agent's own tracer provider."""
    made = observers_from_factories()
    if provider is not None:
        # handrail.tracing sits above the components; it is loaded by name, as a plugin, only for this Agent.
        tracing = importlib.import_module("handrail.tracing")
        made = [o for o in made if not isinstance(o, tracing.TracingObserver)]  # the Agent's provider, not enable()'s
        made.append(tracing.observer_for(provider))
    return made


@component
class Agent(FreshLockOnCopy):
    """A chat model that calls tools in a loop until an exit condition holds.

    Init parameters are public attributes of the same names; they may be reassigned and each
    run reads them afresh (and checks them again). An Agent keeps no per-run state on itself,
    so concurrent runs of one instance are safe.

    Args:
        chat_generator: A :class:`~handrail.components.generators.ChatGenerator`: an object with ``run(messages,
            tools=None, streaming_callback=None, generation_kwargs=None) -> {"replies": [ChatMessage]}``
            (``run_async`` optional, see :class:`~handrail.components.generators.AsyncChatGenerator`).
        tools: Tools and Toolsets (or one Toolset). Toolsets are re-flattened each step.
        system_prompt: Prepended as the system message unless the input starts with one.
        exit_conditions: ``"text"`` and/or tool names (default ``["text"]``); a tool name ends the
            run after that tool ran without error. Unknown names are accepted (tools may come at
            run time).
        state_schema: ``{key: {"type": python_type, "handler": callable}}``; reserved keys refused.
        max_agent_steps: Model calls allowed per run (one step = one model call + its tool calls).
        streaming_callback: Receives streamed chunks; a run-time callback wins.
        raise_on_tool_invocation_failure: Raise on an unknown tool, invalid arguments or a failing
            tool instead of handing the model an error result.
        confirmation_strategies: ``{tool_name | (name, ...) | "*": strategy}``: calls of those tools are
            decided (confirm / reject / modify) before they run. Lookup: exact name, then a tuple holding
            it, then ``"*"``.
        tool_invoker_kwargs: ``convert_result_to_json_string``, ``enable_streaming_callback_passthrough``,
            ``max_workers`` (must equal ``tool_concurrency_limit`` when given).
        tool_concurrency_limit: At most this many tools of one step run at once.
        chat_message_store: A ChatMessageStore (``handrail.stores``): with ``chat_message_store_kwargs`` a run
            loads the stored history before its loop and writes the new exchange after it completes.
        memory_store: A MemoryStore: with ``memory_store_kwargs`` a run adds the memories found to the system
            message (a delimited long-term-context section) and stores its messages after it completes.
        hooks: ``{point: [hook, ...]}`` with points before_run, before_llm, before_tool, after_tool, on_exit,
            after_run (see :mod:`handrail.hooks`); hooks at one point run in list order.
        user_prompt: A Jinja2 template rendered from the run's keyword arguments into one user message
            appended to the input.
        required_variables: Template variables that must be passed to ``run`` (names, or ``"*"`` for all).
        observers: :class:`~handrail.components.drivers.RunObserver` objects told when each effect of a run (model
            call, tool call, approval, hooks, persist, pause, finish) starts and ends, in every run (a run's own
            ``observers`` are added). Runtime objects: not part of ``to_dict``.
        tracer_provider: An OpenTelemetry ``TracerProvider``: every run of this Agent is traced to it (see
            :mod:`handrail.tracing`; needs ``handrail[tracing]``). None: traced only when
            :func:`handrail.tracing.enable` was called. A runtime object: not part of ``to_dict``.

    Raises:
        ConfigurationError: An invalid value (named in the message), or a not-yet-supported parameter.
        ConfigurationTypeError: A value of the wrong type, or tools for a generator without tools support.

    Examples:
        >>> from handrail.testing import ScriptedChatGenerator
        >>> agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("4")]))
        >>> agent.run([ChatMessage.from_user("2+2?")])["last_message"].text
        '4'
    """

    def __init__(
        self,
        *,
        chat_generator: ChatGenerator,
        tools: list[Tool | Toolset] | Toolset | None = None,
        system_prompt: str | None = None,
        exit_conditions: list[str] | None = None,
        state_schema: dict[str, Any] | None = None,
        max_agent_steps: int = 100,
        streaming_callback: StreamingCallback | None = None,
        raise_on_tool_invocation_failure: bool = False,
        confirmation_strategies: Mapping[Any, ConfirmationStrategy] | None = None,
        tool_invoker_kwargs: dict[str, Any] | None = None,
        tool_concurrency_limit: int = 8,
        chat_message_store: ChatMessageStore | None = None,
        memory_store: MemoryStore | None = None,
        hooks: Mapping[str, Sequence[Hook]] | None = None,
        user_prompt: str | None = None,
        required_variables: list[str] | Literal["*"] | None = None,
        observers: Sequence[RunObserver] | None = None,
        tracer_provider: Any = None,
    ) -> None:
        self.chat_generator = chat_generator
        self.tools: list[Tool | Toolset] | Toolset = tools if tools is not None else []
        self.system_prompt = system_prompt
        toolsets = isinstance(self.tools, Toolset) or any(isinstance(t, Toolset) for t in self.tools)
        if not toolsets and not flatten_tools(self.tools):  # a toolset may list its tools only once warmed up
            logging.getLogger("handrail.components.agents").warning(
                "No tools provided to the Agent: it behaves like its chat generator and only returns text. "
                "Pass tools to the Agent (not to the chat generator) to let the model call them."
            )
        self.exit_conditions = cfg.check_exit_conditions(exit_conditions)
        self.state_schema = state_schema
        self.max_agent_steps = max_agent_steps
        self.streaming_callback = streaming_callback
        self.raise_on_tool_invocation_failure = raise_on_tool_invocation_failure
        self.confirmation_strategies = confirmation_strategies
        self.tool_invoker_kwargs = tool_invoker_kwargs
        self.tool_concurrency_limit = tool_concurrency_limit
        self.chat_message_store = chat_message_store
        self.memory_store = memory_store
        self.hooks = hooks
        self.user_prompt = user_prompt
        self.required_variables = required_variables
        self.observers: list[RunObserver] = cfg.check_observers(observers, "observers")
        self.tracer_provider = tracer_provider
        self._warmed: dict[int, object] = {}
        self._closed: dict[int, object] = {}  # closed by close() and not warmed since
        self._warm_lock = threading.Lock()
        self._check()
        refresh_sockets(self)

    def __setattr__(self, name: str, value: object) -> None:
        # None keeps meaning "the default" when an init parameter is reassigned after construction.
        if name == "tools" and value is None:
            value = []
        elif name == "exit_conditions" and value is None:
            value = ["text"]
        elif name == "tracer_provider":
            cfg.check_provider(value, "Agent(tracer_provider=)")
        super().__setattr__(name, value)
        if name in SOCKET_ATTRIBUTES and "_required" in vars(self):  # reassigned after construction
            refresh_sockets(self)

    def _check(self) -> None:
        cfg.check_stores(self.chat_message_store, self.memory_store)
        cfg.check_types(self)
        cfg.check_generator(self.chat_generator, self.tools)
        cfg.check_schema(self.state_schema)
        cfg.check_tools_for_run(flatten_tools(self.tools), {"messages", *(self.state_schema or {})})
        cfg.check_exit_conditions(self.exit_conditions)
        cfg.check_agent_numbers(self.max_agent_steps, self.tool_concurrency_limit, self.tool_invoker_kwargs)
        cfg.check_callback(self.streaming_callback, sync_run=False, where="init")
        cfg.check_strategies(self.confirmation_strategies)
        cfg.check_strategy_rules(self.confirmation_strategies, flatten_tools(self.tools))
        self._hook_table = _hook_table(self.hooks)
        self._required = check_user_prompt(
            self.user_prompt, self.required_variables, set(self.state_schema or {}), _RUN_PARAMETERS
        )

    def close(self) -> None:
        """Close the chat generator, the hooks, the toolsets and the tools that have a ``close()``.

        Each object is closed once (a toolset's tools too, listed before it is closed); every object is closed
        even when one raises, and the first error is raised afterwards. A second close closes nothing, not
        even an object whose ``close()`` raised; the next run (or :meth:`warm_up`) warms every object again, as
        after a fresh start, and the close after it closes them again. Tools and toolsets passed to a single
        run are not the Agent's: whoever made them closes them.
        """
        close_objects(self._to_close())

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: awaits ``aclose()`` where an object has one, else calls ``close()``."""
        await aclose_objects(self._to_close())

    def _to_close(self) -> list[object]:
        with self._warm_lock:  # taken, not held while closing: an aclose awaits
            return objects_to_close(self.tools, (self.chat_generator, *self._hooks()), self._warmed, self._closed)

    def _hooks(self) -> list[object]:
        table = self._hook_table
        return [h for point in table.__slots__ for h in getattr(table, point)]

    def warm_up(self) -> None:
        """Warm up the chat generator, the toolsets, the tools and the hooks (idempotent; runs do it automatically).

        Each object is warmed once, also when several threads start runs at once: a Toolset's own ``warm_up()``
        runs before its tools are listed (the base Toolset warms its tools). Objects assigned to
        ``chat_generator`` or ``tools`` later, and tools a toolset gained, are warmed on the next run.
        """
        _warm.warm_up(self)

    def start(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
        *,
        sync: bool = True,
        observers: Sequence[RunObserver] = (),
        **run_kwargs: Any,
    ) -> AgentRun:
        """Start a run to drive yourself: returns the run as a state machine (an :class:`AgentRun`).

        Every argument is checked here, as :meth:`run` checks it (a bad one raises before any effect). Then
        ``run.send(result)`` returns the next effect (None when the run ended; ``run.result`` is what :meth:`run`
        returns), and ``run.context`` executes any effect with the run's live objects. ``Agent.run`` is exactly
        ``SyncDriver().drive(agent.start(...))``. Close the run when done (``with agent.start(...) as run:``).

        Args:
            messages: As for :meth:`run`.
            streaming_callback: As for :meth:`run`.
            sync: True when the run's effects are executed synchronously (then the callback, tools, hooks and
                strategies must offer sync methods, as for :meth:`run`); False as for :meth:`run_async`.
            observers: Told when each effect starts and ends (with the Agent's own observers).
            **run_kwargs: Any other parameter of :meth:`run` (``snapshot``, ``break_point``, ...), and the
                state-schema values and ``user_prompt`` variables.
        """
        if not isinstance(sync, bool):
            raise ConfigurationTypeError(f"sync must be True or False, got {sync!r}.")
        arguments = {name: run_kwargs.pop(name) for name in _RUN_PARAMETERS & run_kwargs.keys()}
        arguments.update(messages=messages, streaming_callback=streaming_callback, observers=observers,
                         kwargs=run_kwargs)  # fmt: skip
        request, every = _request(self, sync, arguments)
        return AgentRun(start_run(self, request), every, sync=sync)

    @component.output_types(messages=list[ChatMessage], last_message=ChatMessage)
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
        *,
        generation_kwargs: dict[str, Any] | None = None,
        break_point: AgentBreakpoint | Breakpoint | None = None,
        snapshot: Any = None,
        system_prompt: str | None = None,
        tools: list[Tool | Toolset | str] | Toolset | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
        chat_message_store_kwargs: dict[str, Any] | None = None,
        memory_store_kwargs: dict[str, Any] | None = None,
        allow_drift: bool = False,
        unknown_outcome: str | None = None,
        observers: Sequence[RunObserver] = (),
        recorder: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Run the loop on ``messages`` until an exit condition holds.

        Args:
            messages: The input history (not modified).
            streaming_callback: A sync callback for this run (wins over the init one).
            generation_kwargs: Passed to the chat generator (merged over its init settings).
            break_point: An :class:`AgentBreakpoint` (or a bare ``Breakpoint`` / ``ToolBreakpoint``): the run
                stops before the model call, or before a tool step (for one named tool or any), at the given
                visit (``visit_count`` completed visits), writes the snapshot when the breakpoint names a
                directory, and raises :class:`BreakpointException`. On a resumed run it fires at later visits.
            snapshot: An :class:`AgentSnapshot` to resume from (``messages`` must then be empty): the run goes on
                exactly where it stopped, with the snapshot's history and State. Its file (when it has one) is
                locked and read again; decisions in ``tool_execution_decisions`` answer the paused calls by id.
            system_prompt: Replaces a leading system message for this run, or is prepended when there is none.
            tools: This run's tools: objects, names of configured tools, or a Toolset.
            confirmation_strategy_context: A dict passed to every confirmation strategy by identity (a lock,
                a websocket, a queue in it); never copied or serialized.
            chat_message_store_kwargs: ``{"chat_history_id": str, "last_k": int | None}``: the stored history of
                that chat (its last ``last_k`` rounds) goes before ``messages``; the new exchange is written after
                the run completes (a run that pauses or fails writes nothing). Without a chat_history_id nothing
                happens. Recorded in snapshots: leave it out when resuming.
            memory_store_kwargs: ``{"user_id" | "run_id" | "agent_id": str, "search_criteria": {"query", "filters",
                "top_k", "include_memory_metadata"}}``: memories found (for the explicit query, else the last user
                message) go into the system message; the run's non-system messages are stored after it completes.
                Without an id nothing happens.
            allow_drift: Resume even though the agent's definition (tools, prompts, exit conditions, state
                schema) changed since the snapshot was taken.
            unknown_outcome: For a resumed call found ``running`` (its process died mid-call): None raises
                UnknownOutcomeError, ``"retry"`` runs it again with the same ``ToolCallId``, ``"fail"`` records an
                error result "outcome unknown" and goes on.
            observers: Told when each effect of this run and each tool call starts and ends (after the Agent's own
                ``observers``); see :class:`~handrail.components.drivers.RunObserver`.
            recorder: A path or a :class:`handrail.tracing.recording.Recorder`: the run is recorded there as JSON
                Lines (every effect and its result, the decisions with who made them), to be replayed with
                ``handrail replay`` or :func:`handrail.tracing.recording.replay`.
            **kwargs: Initial values of state-schema keys and values of ``user_prompt`` variables; None
                means "not given" for both (a Pipeline passes None for unconnected optional inputs).

        Returns:
            ``{"messages": [...whole history], "last_message": ChatMessage, <state keys>,
            "step_count": int, "token_usage": dict, "tool_call_counts": {tool: int},
            "exit_reason": str}``.

        Raises:
            ConfigurationError: Bad arguments (named), before any model call.
            ConfigurationTypeError: Wrong types, or an async callback in a sync run.
            ToolNotFoundException: Unknown tool, with ``raise_on_tool_invocation_failure``.
            ToolInvocationError: A failing call, with ``raise_on_tool_invocation_failure``.
            BreakpointException: A breakpoint was hit (``.snapshot``, ``.snapshot_file_path``).
            HITLBreakpointException: A pausing confirmation strategy holds calls for a decision.
            SnapshotError: A resumed snapshot is invalid; SnapshotDriftError when the agent changed.
            SnapshotUnavailableError: The snapshot is being resumed elsewhere, was resumed, or finished.
            UnknownOutcomeError: A resumed call was found running and ``unknown_outcome`` is None.
            DecisionConflictError: A given decision differs from the one recorded in the snapshot file.
        """
        request, every = _request(self, True, dict(locals()))
        with AgentRun(start_run(self, request), every) as run:
            result: dict[str, Any] = SyncDriver().drive(run)
        return result

    async def run_async(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
        *,
        generation_kwargs: dict[str, Any] | None = None,
        break_point: AgentBreakpoint | Breakpoint | None = None,
        snapshot: Any = None,
        system_prompt: str | None = None,
        tools: list[Tool | Toolset | str] | Toolset | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
        chat_message_store_kwargs: dict[str, Any] | None = None,
        memory_store_kwargs: dict[str, Any] | None = None,
        allow_drift: bool = False,
        unknown_outcome: str | None = None,
        observers: Sequence[RunObserver] = (),
        recorder: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Async twin of :meth:`run` (same arguments and result); the callback may be sync or async.

        Claiming a snapshot, the first warm-up and every call to a store (loading history and memories, the
        snapshot writes) run in worker threads, so the event loop is not blocked by their I/O; a run cancelled
        meanwhile releases its claim.
        Sync tools run in handrail's own thread pool of the event loop (256 threads by default, shared by the
        loop's runs; :func:`handrail.tools.set_tool_thread_limit`), at most ``tool_concurrency_limit`` of a step at
        once. A sync tool still running when the run is cancelled finishes in its thread (Python cannot stop a
        thread) and records its outcome; a durable run keeps its claim on the snapshot until then.
        """
        request, every = _request(self, False, dict(locals()))
        if snapshot is not None or _warm.needs_warm_up(self):  # a claim, a warm-up: blocking I/O
            started = await _warm.start_run_off_loop(self, request)
        else:
            started = start_run(self, request)
        async with AgentRun(started, every, sync=False) as run:
            result: dict[str, Any] = await AsyncDriver().drive(run)
        return result

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}`` (generator and tools nested, types as strings).

        Raises:
            SerializationError: For parts that cannot be imported back (lambdas, local classes), or a value that
                is not JSON data; the message names the part (``Agent.to_dict(): state_schema['notes'].handler``).
        """
        return agent_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Agent:
        """Rebuild an Agent from :meth:`to_dict` output (``data`` is not modified)."""
        return cls(**agent_init_parameters(data, cls))
