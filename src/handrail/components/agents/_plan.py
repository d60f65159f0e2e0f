"""Turning one ``Agent.run`` call into a checked :class:`RunPlan`, its initial State and its model call.

Every check here happens before the first effect: bad arguments, a bad breakpoint, a snapshot in use
or a changed agent raise before the model is called or anything is written.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from handrail.components.agents import _config as cfg
from handrail.components.agents._confirm import Approvals, find_strategy
from handrail.components.agents._context import ModelCall
from handrail.components.agents._machine import RunParts, RunPlan
from handrail.components.agents._prompt import render_user_prompt, template_variables
from handrail.components.agents._resume import (
    check_break_point,
    check_consistency,
    check_decision_types,
    check_decisions,
    check_drift,
    claim_snapshot,
    fingerprint_of,
    let_go,
    pausing_store,
)
from handrail.components.agents._run_state import RunState
from handrail.components.agents._stores import StoreUse, check_store_kwargs, with_ids
from handrail.components.agents._tool_defaults import may_ask_by_default, with_tool_defaults
from handrail.components.agents._unknown_outcome import check_unknown_outcome
from handrail.components.tools._step import ToolStepOptions
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import StreamingCallback
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop.types import is_pausing_strategy
from handrail.tools._lifecycle import warm_up_tools
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

if TYPE_CHECKING:
    from handrail.components.agents._ledger import Ledger
    from handrail.components.agents.agent import Agent
    from handrail.dataclasses.breakpoints import AgentBreakpoint
    from handrail.dataclasses.snapshot import AgentSnapshot
    from handrail.stores.types import SnapshotStore

__all__ = ["RunRequest", "Started", "start_run"]


@dataclass(slots=True, kw_only=True)
class RunRequest:
    """The arguments of one ``run`` / ``run_async`` / ``start`` call (the fields are named as the parameters)."""

    messages: list[ChatMessage]
    sync_run: bool
    kwargs: dict[str, Any]
    """The state-schema values and ``user_prompt`` variables (None values of optional ones already dropped)."""
    streaming_callback: StreamingCallback | None = None
    generation_kwargs: dict[str, Any] | None = None
    system_prompt: str | None = None
    tools: Any = None
    confirmation_strategy_context: dict[str, Any] | None = None
    break_point: Any = None
    snapshot: Any = None
    allow_drift: bool = False
    unknown_outcome: Any = None
    chat_message_store_kwargs: Any = None
    memory_store_kwargs: Any = None


@dataclass(frozen=True, slots=True)
class Started:
    """A checked run, ready to be driven: its plan, parts, state and model call."""

    plan: RunPlan
    parts: RunParts
    run: RunState
    model: ModelCall


@dataclass(slots=True)
class _Tools:
    run_tools: list[Tool | Toolset]
    flat: list[Tool]
    names: set[str]
    has_toolset: bool


def start_run(agent: Agent, req: RunRequest) -> Started:
    """Check everything and build the run.

    A resumed snapshot's file is locked for the run: released here when a check fails, else by the
    caller (``parts.checkpoints.close()``) when the run ends.

    Raises:
        ConfigurationError / ConfigurationTypeError: Bad arguments (named), before anything runs.
        SnapshotUnavailableError, SnapshotDriftError, DecisionConflictError: A snapshot that cannot be resumed.
    """
    if not isinstance(req.allow_drift, bool):  # "yes" or 1 would silently allow a changed agent
        raise ConfigurationTypeError(
            f"allow_drift must be a bool, got {type(req.allow_drift).__name__} ({req.allow_drift!r:.80})."
        )
    if req.snapshot is None:
        return _build(agent, req, None, None)
    from handrail.dataclasses.snapshot import AgentSnapshot

    if not isinstance(req.snapshot, AgentSnapshot):
        raise ConfigurationTypeError(f"snapshot must be an AgentSnapshot, got {type(req.snapshot).__name__}.")
    check_decision_types(req.snapshot.tool_execution_decisions)
    snapshot, store, lease = claim_snapshot(req.snapshot)
    try:
        started = _build(agent, req, snapshot, store)
    except BaseException:
        let_go(lease, None if store is snapshot.store else store)  # a store given with the snapshot stays open
        raise
    assert started.parts.checkpoints is not None  # a resumed run always has checkpoints
    started.parts.checkpoints.lease = lease
    return started


def _build(
    agent: Agent, req: RunRequest, snapshot: AgentSnapshot | None, resumed_store: SnapshotStore | None
) -> Started:
    agent._check()
    callback = req.streaming_callback or agent.streaming_callback
    cfg.check_callback(callback, sync_run=req.sync_run, where="run-time" if req.streaming_callback else "init")
    stores = _store_use(agent, req, snapshot)
    if snapshot is not None:
        history, kwargs = _resume_input(snapshot, req, agent._required), {}
    else:
        history = cfg.check_messages(req.messages)
        kwargs = _prompt_and_state_args(agent, history, req.kwargs)
        if stores.active:
            history = with_ids(history)
    if req.generation_kwargs is not None and not isinstance(req.generation_kwargs, dict):
        raise ConfigurationTypeError(
            f"generation_kwargs must be a dict or None, got {type(req.generation_kwargs).__name__}."
        )
    context = req.confirmation_strategy_context
    if context is not None and not isinstance(context, dict):
        raise ConfigurationTypeError(
            f"confirmation_strategy_context must be a dict or None, got {type(context).__name__}; it is "
            f"passed to every confirmation strategy as is (put your objects in a dict)."
        )
    tools = _run_tools(agent, req)
    break_point = check_break_point(req.break_point, None if tools.has_toolset else tools.names)
    unknown_outcome = check_unknown_outcome(req.unknown_outcome)
    strategies = with_tool_defaults(agent.confirmation_strategies, tools.flat, find_strategy)  # + tools' own
    if resumed_store is not None:
        pausing_store(strategies, break_point)  # still refuses two different stores
        store, owns_store = resumed_store, snapshot is None or resumed_store is not snapshot.store
    else:
        store, owns_store = pausing_store(strategies, break_point)
    fingerprint = fingerprint_of(tools.flat, agent) if (snapshot or break_point or store) else {}
    if snapshot is not None:
        check_consistency(snapshot)
        check_drift(snapshot.fingerprint, fingerprint, f"'{snapshot.snapshot_id or 'in memory'}'", req.allow_drift)
        check_decisions(snapshot)
    _check_and_warn(agent, req, tools)
    if snapshot is None:
        cfg.with_system_prompt(history, req.system_prompt, agent.system_prompt)
    state = _initial_state(agent, history, kwargs, tools.names, snapshot)
    ledger = None
    if snapshot is not None or store is not None:
        from handrail.components.agents._ledger import Ledger

        ledger = Ledger(snapshot.ledger if snapshot else None,
                        snapshot.tool_execution_decisions if snapshot else (), unknown_outcome,
                        read_under=snapshot.read_under if snapshot else None)  # fmt: skip
    run = _run_state(state, snapshot, ledger)
    approvals, options = _step_options(agent, callback, context, run, may_ask_by_default(tools.run_tools, tools.flat))
    checkpoints = None
    if ledger is not None or break_point is not None:
        from handrail.components.agents._checkpoints import Checkpoints

        checkpoints = Checkpoints(
            break_point=break_point, store=store, agent_name=_agent_name(break_point, snapshot),
            fingerprint=fingerprint, metadata=_snapshot_metadata(strategies, snapshot, stores), ledger=ledger,
            resumed=snapshot, owns_store=owns_store, run=run,
        )  # fmt: skip
    elif owns_store and store is not None:  # pragma: no cover - a store always comes with a ledger
        store.close()
    plan = RunPlan(
        tools=tools.run_tools,
        static_tools=None if tools.has_toolset else tools.flat,
        static_by_name=MappingProxyType({} if tools.has_toolset else {t.name: t for t in tools.flat}),
        static_names=() if tools.has_toolset else tuple(t.name for t in tools.flat),
        exit_tools=frozenset(c for c in agent.exit_conditions if c != "text"),
        max_agent_steps=agent.max_agent_steps,
        step_options=options,
        hooks=agent._hook_table,
        model_name=type(agent.chat_generator).__name__,
    )
    parts = RunParts(approvals, checkpoints, stores if stores.active else None)
    return Started(plan, parts, run, model_call(agent, callback, req.generation_kwargs))


def _run_state(state: State, snapshot: AgentSnapshot | None, ledger: Ledger | None) -> RunState:
    """The state a run starts from: fresh, or the snapshot's (position, visit counts, ledger)."""
    if snapshot is None:
        return RunState(state, ledger=ledger)
    visits = {"chat_generator": 0, "tool_invoker": 0, **snapshot.component_visits}
    return RunState(state, snapshot.position, visits, dict(snapshot.tool_visits), ledger)


def _run_tools(agent: Agent, req: RunRequest) -> _Tools:
    """The run's tools, listed after the warm-up (a toolset may have its tools only once it is warmed up)."""
    run_tools = cfg.select_tools(agent.tools, req.tools)
    if req.tools is not None:
        warm_up_tools(run_tools, {})  # a run's own tools and toolsets: every run (warm_up is idempotent)
    agent.warm_up()
    flat = flatten_tools(run_tools)
    cfg.check_tools_for_run(flat, {"messages", *(agent.state_schema or {})})
    if req.sync_run:
        cfg.check_sync_hooks(agent._hook_table)
        cfg.check_sync_strategies(agent.confirmation_strategies)
    return _Tools(run_tools, flat, {t.name for t in flat}, any(isinstance(t, Toolset) for t in run_tools))


def _check_and_warn(agent: Agent, req: RunRequest, tools: _Tools) -> None:
    if tools.flat and req.tools is not None:
        cfg.check_generator(agent.chat_generator, tools.flat)
    exit_tools = {c for c in agent.exit_conditions if c != "text"}
    if exit_tools - tools.names and not tools.has_toolset:
        warnings.warn(
            f"exit_conditions name tools this run does not have: {sorted(exit_tools - tools.names)}; "
            f"available tools: {sorted(tools.names)}.",
            stacklevel=5,
        )
    listed = all(getattr(t, "tools_may_ask", False) for t in tools.run_tools if isinstance(t, Toolset))
    if agent.confirmation_strategies and (not tools.has_toolset or listed):  # MCP toolsets listed at warm-up
        cfg.warn_unmatched_strategies(agent.confirmation_strategies, tools.names)


def _initial_state(
    agent: Any, history: list[ChatMessage], kwargs: dict[str, Any], names: set[str], snapshot: AgentSnapshot | None
) -> State:
    state = State(agent.state_schema or {}, kwargs)
    counts = dict.fromkeys(names, 0)
    if snapshot is not None:
        state.data.update(snapshot.state)
        counts.update(snapshot.state.get("tool_call_counts") or {})
    state.data["tool_call_counts"] = counts
    state.data["messages"] = history
    return state


def _step_options(
    agent: Any, callback: StreamingCallback | None, context: dict[str, Any] | None, run: RunState, tools_ask: bool
) -> tuple[Approvals | None, ToolStepOptions]:
    invoker = agent.tool_invoker_kwargs or {}
    json_strings = bool(invoker.get("convert_result_to_json_string", False))
    approvals = None
    ledger = run.ledger
    if agent.confirmation_strategies or ledger is not None or tools_ask:
        approvals = Approvals(agent.confirmation_strategies or {}, context, run)
    if ledger is not None:
        ledger.json_strings = json_strings
    options = ToolStepOptions(
        raise_on_failure=agent.raise_on_tool_invocation_failure,
        convert_result_to_json_string=json_strings,
        max_workers=agent.tool_concurrency_limit,
        streaming_callback=callback,
        passthrough=bool(invoker.get("enable_streaming_callback_passthrough", False)),
        gate=approvals.gate if approvals is not None else None,
    )
    if approvals is not None:
        approvals.options = options
    return approvals, options


def _prompt_and_state_args(agent: Agent, history: list[ChatMessage], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Render user_prompt (appended to ``history``) and return the state-schema keyword arguments."""
    schema = agent.state_schema or {}
    variables = template_variables(agent.user_prompt) if agent.user_prompt is not None else frozenset()
    unknown = sorted(set(kwargs) - set(schema) - variables)
    if unknown:
        raise ConfigurationError(
            f"Unexpected run arguments {unknown}: keyword arguments must be keys of the state schema "
            f"({sorted(schema)}) or variables of user_prompt ({sorted(variables)})."
        )
    if agent.user_prompt is not None:
        values = {k: v for k, v in kwargs.items() if k in variables}
        history.append(render_user_prompt(agent.user_prompt, values, agent._required))
        kwargs = {k: v for k, v in kwargs.items() if k in schema}
    return kwargs


def _resume_input(snapshot: AgentSnapshot, req: RunRequest, required: frozenset[str]) -> list[ChatMessage]:
    """The history of a resumed run; arguments that only shape a fresh run must be left out (None: not given)."""
    if req.messages:
        raise ConfigurationError(
            "messages must be empty when resuming from a snapshot: the history comes from the snapshot "
            "(call run(messages=[], snapshot=...))."
        )
    kwargs = sorted(k for k, v in req.kwargs.items() if v is not None or k not in required)
    if req.system_prompt is not None or kwargs:
        given = ["system_prompt"] * (req.system_prompt is not None) + kwargs
        raise ConfigurationError(
            f"{given} cannot be given when resuming: the system message and State come from the snapshot."
        )
    return list(snapshot.messages)


def _agent_name(break_point: AgentBreakpoint | None, snapshot: AgentSnapshot | None) -> str:
    if break_point is not None:
        return break_point.agent_name
    return snapshot.break_point.agent_name if snapshot is not None else ""


def _store_use(agent: Agent, req: RunRequest, snapshot: AgentSnapshot | None) -> StoreUse:
    """Which stores this run reads and writes (on resume: as recorded in the snapshot)."""
    chat = check_store_kwargs(agent.chat_message_store, req.chat_message_store_kwargs, "chat_message_store_kwargs")
    memory = check_store_kwargs(agent.memory_store, req.memory_store_kwargs, "memory_store_kwargs")
    if snapshot is None:
        return StoreUse(agent.chat_message_store, chat, agent.memory_store, memory)
    recorded = snapshot.metadata.get("run") or {}
    for name, given in (("chat_message_store_kwargs", chat), ("memory_store_kwargs", memory)):
        if given is not None and given != recorded.get(name):
            raise ConfigurationError(
                f"{name} differ from those of the paused run ({recorded.get(name)!r}); leave them out when resuming: "
                f"the snapshot records them."
            )
    use = StoreUse(agent.chat_message_store, recorded.get("chat_message_store_kwargs"), agent.memory_store,
                   recorded.get("memory_store_kwargs"), int(recorded.get("new_from") or 0))  # fmt: skip
    for store, kwargs, name in ((use.chat_store, use.chat_kwargs, "chat_message_store"),
                                (use.memory_store, use.memory_kwargs, "memory_store")):  # fmt: skip
        if kwargs is not None and store is None:
            raise ConfigurationError(f"The paused run wrote to a {name}; give the Agent one to resume it.")
    return use


def _snapshot_metadata(
    strategies: Mapping[Any, Any], snapshot: AgentSnapshot | None, stores: StoreUse
) -> dict[str, Any]:
    """The snapshot's metadata (on resume) updated with the pausing strategies' ``metadata`` and the run's stores.

    ``strategies``: the Agent's, with those its tools bring themselves (an MCP toolset's ``confirmation_strategy``).
    """
    metadata = dict(snapshot.metadata) if snapshot is not None else {}
    if stores.active:
        metadata["run"] = stores.to_metadata()
    for key, strategy in strategies.items():
        if not is_pausing_strategy(strategy) or not strategy.metadata:
            continue
        if not isinstance(strategy.metadata, Mapping):
            raise ConfigurationTypeError(
                f"The pausing strategy for {key!r} ({type(strategy).__name__}) has metadata of type "
                f"{type(strategy.metadata).__name__} ({strategy.metadata!r:.80}); a pausing strategy's metadata "
                f"must be a dict (recorded in every snapshot it pauses into) or None."
            )
        metadata.update(strategy.metadata)
    return metadata


def model_call(agent: Agent, callback: StreamingCallback | None, generation_kwargs: dict[str, Any] | None) -> ModelCall:
    """How this run calls the chat generator (extra arguments checked against its ``run`` signature)."""
    params = cfg.generator_params(agent.chat_generator)
    extra: dict[str, Any] = {}
    if callback is not None:
        extra["streaming_callback"] = callback
    if generation_kwargs is not None:
        extra["generation_kwargs"] = generation_kwargs
    if params is not None:
        dropped = sorted(k for k in extra if k not in params)
        if dropped:
            raise ConfigurationError(
                f"{type(agent.chat_generator).__name__}.run does not accept {dropped}; cannot pass them."
            )
    return ModelCall(agent.chat_generator, extra, params is None or "tools" in params, callback)
