"""Checks of Agent configuration and run arguments (all raise before anything runs)."""

from __future__ import annotations

import inspect
import itertools
import logging
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from handrail.components.tools.tool_invoker import check_max_workers
from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.dataclasses.state import validate_state_schema
from handrail.dataclasses.streaming import is_async_callback
from handrail.errors import ConfigurationError, ConfigurationTypeError, StateError
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import ToolsType, flatten_tools

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.generators.types import ChatGenerator
    from handrail.human_in_the_loop.types import ConfirmationStrategy
    from handrail.stores.types import ChatMessageStore, MemoryStore

_LOG = logging.getLogger("handrail.components.agents")

__all__ = [
    "TOOL_INVOKER_KEYS",
    "check_callback",
    "check_exit_conditions",
    "check_generator",
    "check_messages",
    "first_non_message",
    "generator_params",
    "select_tools",
    "with_system_prompt",
]

TOOL_INVOKER_KEYS = frozenset({"convert_result_to_json_string", "enable_streaming_callback_passthrough", "max_workers"})
"""Keys ``tool_invoker_kwargs`` may hold (the rest of the ToolInvoker's settings come from the Agent)."""


_ROLE = operator.attrgetter("role")


def generator_params(generator: ChatGenerator) -> frozenset[str] | None:
    """Names of the parameters of ``generator.run``; None when it takes ``**kwargs`` (accepts all).

    Read once per class when ``run`` is the class's own method (a run-time check of every run otherwise).
    """
    run = generator.run
    function = getattr(run, "__func__", None)
    if function is None or function is not getattr(type(generator), "run", None):
        return _read_params(run)
    try:
        return _PARAMS[function]
    except KeyError:
        found = _PARAMS[function] = _read_params(run)
        return found


_PARAMS: dict[Any, frozenset[str] | None] = {}
"""``generator_params`` per class ``run`` function."""


def _read_params(function: Callable[..., object]) -> frozenset[str] | None:
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


def check_tools_for_run(tools: list[Tool], state_keys: set[str]) -> None:
    """Check tools against the run: State keys they write exist.

    (A tool with only an ``async_function`` is fine in a sync run too: it runs on an event loop of its own.)

    Args:
        tools: The flattened tools.
        state_keys: Keys of the State schema (``messages`` included).

    Raises:
        StateError: A tool's ``outputs_to_state`` names a key the state schema does not have.
    """
    for tool in tools:
        unknown = sorted(set(tool.outputs_to_state or ()) - state_keys)
        if unknown:
            raise StateError(
                f"Tool '{tool.name}' writes State keys {unknown} (outputs_to_state) that the Agent's state_schema "
                f"does not define. Schema keys: {sorted(state_keys)}."
            )


def check_sync_hooks(table: Any) -> None:
    """Refuse hooks that can only run asynchronously (an async-only ``@hook``) in a sync run.

    Raises:
        ConfigurationTypeError: Naming the point and the hook.
    """
    for point in table.__slots__:
        for hook in getattr(table, point):
            if getattr(hook, "function", True) is None and getattr(hook, "async_function", None) is not None:
                raise ConfigurationTypeError(
                    f"The {point} hook {hook!r} has only an async function; run the agent with run_async, "
                    f"or give the hook a sync function."
                )


def check_sync_strategies(strategies: Mapping[Any, ConfirmationStrategy] | None) -> None:
    """Refuse, in a sync run, a strategy whose confirmation UI can only answer asynchronously.

    Raises:
        ConfigurationTypeError: Naming the strategy's key and the UI, before the model is called.
    """
    for key, strategy in (strategies or {}).items():
        ui = getattr(strategy, "confirmation_ui", None)
        if ui is None or callable(getattr(ui, "get_user_confirmation", None)):
            continue
        if callable(getattr(ui, "get_user_confirmation_async", None)):
            raise ConfigurationTypeError(
                f"confirmation_strategies[{key!r}] asks through {type(ui).__name__}, which has only "
                f"get_user_confirmation_async; run the agent with run_async, or give the UI a sync "
                f"get_user_confirmation."
            )


def check_types(agent: Agent) -> None:
    """Check the types of the Agent's plain settings.

    Raises:
        ConfigurationTypeError: A non-str system_prompt, a non-bool raise_on_tool_invocation_failure,
            or a chat generator whose ``run`` is a coroutine function or whose ``run_async`` is not one.
    """
    if agent.system_prompt is not None and not isinstance(agent.system_prompt, str):
        raise ConfigurationTypeError(f"system_prompt must be a str or None, got {type(agent.system_prompt).__name__}.")
    if not isinstance(agent.raise_on_tool_invocation_failure, bool):
        raise ConfigurationTypeError(
            f"raise_on_tool_invocation_failure must be a bool, got {agent.raise_on_tool_invocation_failure!r}."
        )
    if inspect.iscoroutinefunction(getattr(agent.chat_generator, "run", None)):
        raise ConfigurationTypeError(
            f"{type(agent.chat_generator).__name__}.run is a coroutine function; a chat generator's run must be "
            f"sync (put the async version in run_async)."
        )
    run_async = getattr(agent.chat_generator, "run_async", None)
    if run_async is not None and not inspect.iscoroutinefunction(run_async):
        raise ConfigurationTypeError(
            f"{type(agent.chat_generator).__name__}.run_async is not a coroutine function; a chat generator's "
            f"run_async must be async def (or leave it out: an async run calls run in a worker thread)."
        )


def check_generator(generator: ChatGenerator, tools: ToolsType | None) -> None:
    """Check the chat generator has a ``run`` and, when tools are given, accepts ``tools``.

    Raises:
        ConfigurationTypeError: When it has no callable ``run``, or tools are given and its ``run``
            has no ``tools`` parameter.
    """
    if not callable(getattr(generator, "run", None)):
        raise ConfigurationTypeError(
            f"chat_generator must have a run(messages, ...) method; got {type(generator).__name__}."
        )
    params = generator_params(generator)
    if flatten_tools(tools) and params is not None and "tools" not in params:
        raise ConfigurationTypeError(
            f"{type(generator).__name__} does not accept tools: its run method has no tools parameter, so it cannot "
            f"call tools. Use a chat generator that supports tools, or give the Agent no tools."
        )


def check_exit_conditions(value: object) -> list[str]:
    """Return the exit conditions (default ``["text"]``).

    Raises:
        ConfigurationError: For a non-list, an empty list or a non-string item.
    """
    if value is None:
        return ["text"]
    if not isinstance(value, list) or not value:
        raise ConfigurationError(f"exit_conditions must be a non-empty list of strings, got {value!r}.")
    bad = [v for v in value if not isinstance(v, str) or not v]
    if bad:
        raise ConfigurationError(f"exit_conditions must hold tool names or 'text'; invalid items: {bad!r}.")
    return list(value)


def check_callback(callback: object, *, sync_run: bool, where: str) -> None:
    """Check a streaming callback.

    Raises:
        ConfigurationTypeError: When it is not callable, or is a coroutine function in a sync run.
    """
    if callback is None:
        return
    if not callable(callback):
        raise ConfigurationTypeError(f"The {where} streaming_callback must be callable, got {callback!r}.")
    if sync_run and is_async_callback(callback):
        raise ConfigurationTypeError(
            f"The {where} streaming_callback is a coroutine function; a sync run needs a sync callback. "
            f"Use run_async for an async callback."
        )


def check_agent_numbers(max_agent_steps: object, tool_concurrency_limit: object, invoker_kwargs: object) -> int:
    """Check numeric settings; return the tool concurrency limit to use.

    Raises:
        ConfigurationError: A negative step limit, a limit below 1, an unknown ``tool_invoker_kwargs``
            key, or a ``max_workers`` that conflicts with ``tool_concurrency_limit``.
    """
    if isinstance(max_agent_steps, bool) or not isinstance(max_agent_steps, int) or max_agent_steps < 0:
        raise ConfigurationError(f"max_agent_steps must be an integer ≥ 0, got {max_agent_steps!r}.")
    limit = check_max_workers(tool_concurrency_limit, "tool_concurrency_limit")
    if invoker_kwargs is None:
        return limit
    if not isinstance(invoker_kwargs, Mapping):
        raise ConfigurationTypeError(f"tool_invoker_kwargs must be a dict, got {type(invoker_kwargs).__name__}.")
    unknown = sorted(set(invoker_kwargs) - TOOL_INVOKER_KEYS)
    if unknown:
        raise ConfigurationError(
            f"tool_invoker_kwargs has unknown keys {unknown}; allowed: {sorted(TOOL_INVOKER_KEYS)} "
            f"(raise_on_failure comes from raise_on_tool_invocation_failure)."
        )
    if "max_workers" in invoker_kwargs:
        workers = check_max_workers(invoker_kwargs["max_workers"])
        if workers != limit:
            raise ConfigurationError(
                f"tool_invoker_kwargs['max_workers']={workers} conflicts with tool_concurrency_limit={limit}; "
                f"set only tool_concurrency_limit."
            )
    return limit


def check_schema(state_schema: Mapping[str, Any] | None) -> None:
    """Validate the user state schema (see ``validate_state_schema``)."""
    if state_schema is not None:
        validate_state_schema(state_schema)


def check_strategies(strategies: Mapping[Any, ConfirmationStrategy] | None) -> None:
    """Check ``confirmation_strategies``: ``{name | (name, ...) | "*": strategy}``.

    Raises:
        ConfigurationTypeError: A non-dict, a key that is neither a str nor a tuple of str, a strategy
            class instead of an instance, or a strategy without a callable ``run``.
    """
    if strategies is None:
        return
    if not isinstance(strategies, Mapping):
        raise ConfigurationTypeError(
            f"confirmation_strategies must be a dict {{tool name or tuple of names or '*': strategy}}, "
            f"got {type(strategies).__name__}."
        )
    for key, strategy in strategies.items():
        names = key if isinstance(key, tuple) else (key,)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ConfigurationTypeError(
                f"confirmation_strategies key {key!r} must be a tool name, a tuple of names or '*'."
            )
        if isinstance(strategy, type):
            raise ConfigurationTypeError(
                f"confirmation_strategies[{key!r}] is the class '{strategy.__qualname__}', not a strategy object; "
                f"pass an instance ({strategy.__name__}(...))."
            )
        if not callable(getattr(strategy, "run", None)):
            raise ConfigurationTypeError(
                f"confirmation_strategies[{key!r}]: {type(strategy).__name__} has no callable run() method; a "
                f"confirmation strategy needs one (run_async is optional)."
            )


def check_strategy_rules(strategies: Mapping[Any, Any] | None, tools: Sequence[Any]) -> None:
    """Refuse a rule of a strategy (``AskWhenPolicy``'s, ``quorum_when``) that reads a name its tool does not take.

    A tool's names are its parameters and the ones it reads from State. Under a tuple key every tool named must
    take them; under ``"*"`` some tool must (a call of a tool without them makes the rule fail, which asks).
    Tools that come at run time (toolsets) are not checked.

    Raises:
        ConfigurationError: Naming the strategy's key, the rule and the unknown names.
    """
    from handrail.core._rules import compile_rule
    from handrail.human_in_the_loop._approval_settings import argument_rules

    known = {t.name: _argument_names(t) for t in tools}
    for key, strategy in (strategies or {}).items():
        rules = argument_rules(strategy)
        if not rules:
            continue
        names = key if isinstance(key, tuple) else (key,)
        if names == ("*",):
            checked = [set().union(*known.values())] if known else []
        else:
            checked = [known[n] for n in names if n in known]
        for label, source in rules.items():
            for argument_names in checked:
                try:
                    compile_rule(source, names=argument_names, what=label)
                except ConfigurationError as exc:
                    raise ConfigurationError(f"confirmation_strategies[{key!r}]: {exc}") from None


def _argument_names(tool: Any) -> set[str]:
    properties = (getattr(tool, "parameters", None) or {}).get("properties") or {}
    return {*properties, *(getattr(tool, "inputs_from_state", None) or {}).values()}


def warn_unmatched_strategies(strategies: Mapping[Any, ConfirmationStrategy], tool_names: set[str]) -> None:
    """Warn about strategy keys that match no tool of the run: a typo there silently gates nothing."""
    unmatched = [
        key
        for key in strategies
        if key != "*" and not any(n in tool_names for n in (key if isinstance(key, tuple) else (key,)))
    ]
    if unmatched:
        from handrail.tools._names import wire_name

        meant = {key: wire_name(key) for key in unmatched if isinstance(key, str) and wire_name(key) in tool_names}
        hint = "".join(f" Did you mean {v!r} for {k!r} (the name the model sees)?" for k, v in meant.items())
        warnings.warn(
            f"confirmation_strategies keys {unmatched} match no tool of this run (tools: {sorted(tool_names)}); "
            f"calls of the tools you meant run WITHOUT approval. Check the names.{hint}",
            stacklevel=6,
        )


def check_messages(messages: object) -> list[ChatMessage]:
    """Return ``messages`` as a new list.

    Raises:
        ConfigurationTypeError: When it is not a list of ChatMessage.
    """
    if not isinstance(messages, list | tuple):
        raise ConfigurationTypeError(f"messages must be a list of ChatMessage, got {type(messages).__name__}.")
    bad = first_non_message(messages)
    if bad is not None:
        raise ConfigurationTypeError(f"messages[{bad}] is a {type(messages[bad]).__name__}, not a ChatMessage.")
    return list(messages)


def first_non_message(messages: list[Any] | tuple[Any, ...]) -> int | None:
    """The index of the first item that is not a ChatMessage (subclasses count as one), or None.

    The common case, every item exactly a ChatMessage, is checked at C speed (~10 ns an item).
    """
    if list(map(type, messages)).count(ChatMessage) == len(messages):
        return None
    return next((i for i, m in enumerate(messages) if not isinstance(m, ChatMessage)), None)


def select_tools(configured: list[Tool | Toolset] | Toolset, runtime: object) -> list[Tool | Toolset]:
    """Resolve the run-time ``tools`` argument.

    Args:
        configured: The Agent's tools.
        runtime: None (use the configured tools), a Toolset, or a list mixing Tool/Toolset
            objects and names of configured tools.

    Returns:
        The run's tools as a list (duplicates refused by ``flatten_tools``).

    Raises:
        ConfigurationError: Names with no configured tools, unknown names, duplicate names.
        ConfigurationTypeError: Any other type.
    """
    if runtime is None:
        return [configured] if isinstance(configured, Toolset) else list(configured)
    if isinstance(runtime, Toolset):
        return [runtime]
    if not isinstance(runtime, list | tuple):
        raise ConfigurationTypeError(
            "tools must be a list of Tool and/or Toolset objects, a Toolset, or a list of tool names (str)."
        )
    names = [t for t in runtime if isinstance(t, str)]
    chosen: list[Tool | Toolset] = [t for t in runtime if isinstance(t, Tool | Toolset)]
    others = [t for t in runtime if not isinstance(t, str | Tool | Toolset)]
    if others:
        raise ConfigurationTypeError(
            f"tools must be Tool/Toolset objects or tool names (str); got {type(others[0]).__name__}."
        )
    if names:
        available = {t.name: t for t in flatten_tools(configured)}
        if not available:
            raise ConfigurationError("Tool names were given but no tools were configured for the Agent.")
        unknown = [n for n in names if n not in available]
        if unknown:
            raise ConfigurationError(
                f"The following tool names are not valid: {unknown}. Valid tool names are: {sorted(available)}."
            )
        chosen = [*(available[n] for n in names), *chosen]
    flatten_tools(chosen)
    return chosen


def with_system_prompt(messages: list[ChatMessage], run_prompt: str | None, init_prompt: str | None) -> None:
    """Apply the system prompt rules to ``messages`` in place: at most one system message, always first.

    A run-time prompt replaces a leading system message (or is prepended); otherwise a leading
    system message is kept and the init prompt is not added; otherwise the init prompt is prepended.
    """
    leading = bool(messages) and messages[0].role is ChatRole.SYSTEM
    if run_prompt is not None:
        if leading:
            messages[0] = ChatMessage.from_system(run_prompt)
        else:
            messages.insert(0, ChatMessage.from_system(run_prompt))
    elif not leading and init_prompt is not None:
        messages.insert(0, ChatMessage.from_system(init_prompt))
    if messages and all(m.role is ChatRole.SYSTEM for m in messages):
        _LOG.warning("All messages provided to the Agent component are system messages. This is not recommended.")
    if ChatRole.SYSTEM not in map(_ROLE, itertools.islice(messages, 1, None)):
        return
    extra = [i for i, m in enumerate(messages) if i > 0 and m.role is ChatRole.SYSTEM]
    if extra:
        _LOG.warning(
            "messages hold system messages after the first position (indexes %s); every model input "
            "should have one system message, first.",
            extra,
        )


def check_stores(chat_message_store: ChatMessageStore | None, memory_store: MemoryStore | None) -> None:
    """The stores must have the methods the Agent calls (duck typing, like chat generators).

    Raises:
        ConfigurationTypeError: A store lacks a method, named.
    """
    needs = (
        ("chat_message_store", chat_message_store, ("write_messages", "retrieve_messages")),
        ("memory_store", memory_store, ("add_memories", "search_memories")),
    )
    for name, store, methods in needs:
        if store is None:
            continue
        missing = [m for m in methods if not callable(getattr(store, m, None))]
        if missing:
            raise ConfigurationTypeError(
                f"{name} must be a {'ChatMessageStore' if name == 'chat_message_store' else 'MemoryStore'} "
                f"(handrail.stores); {type(store).__name__} has no {missing}."
            )


def check_observers(observers: Any, name: str) -> list[Any]:
    """``observers`` as a list, each one with callable ``started`` and ``ended`` (None: no observers).

    Raises:
        ConfigurationTypeError: Not a list or tuple, or an item without those methods (named by position).
    """
    if observers is None:
        return []
    if not isinstance(observers, list | tuple):
        raise ConfigurationTypeError(f"{name} must be a list of RunObserver objects, got {type(observers).__name__}.")
    for i, observer in enumerate(observers):
        missing = [m for m in ("started", "ended") if not callable(getattr(observer, m, None))]
        if missing:
            raise ConfigurationTypeError(
                f"{name}[{i}] ({type(observer).__name__}) is not a RunObserver: it has no {' or '.join(missing)} "
                f"method (see handrail.components.drivers.RunObserver)."
            )
    return list(observers)


def check_provider(provider: Any, name: str, method: str = "get_tracer", kind: str = "TracerProvider") -> Any:
    """``provider`` when it is None or has a callable ``method`` (an OpenTelemetry provider), else refused.

    Raises:
        ConfigurationTypeError: Naming the parameter ``name`` and what was given.
    """
    if provider is not None and not callable(getattr(provider, method, None)):
        shown = repr(provider) if isinstance(provider, str | int | float | bool) else type(provider).__name__
        raise ConfigurationTypeError(
            f"{name} must be an OpenTelemetry {kind} (an object with a {method}() method) or None, got {shown}."
        )
    return provider


def tracing_switch(tracing: Any, tracer_provider: Any) -> bool:
    """Whether a service's or worker's ``tracing=`` / ``tracer_provider=`` pair turns tracing on (either does).

    Raises:
        ConfigurationTypeError: ``tracing`` is not a bool, or ``tracer_provider`` is not a TracerProvider.
    """
    if not isinstance(tracing, bool):
        raise ConfigurationTypeError(f"tracing must be a bool, got {type(tracing).__name__}.")
    return check_provider(tracer_provider, "tracer_provider") is not None or tracing
