"""The Agent as a dict and back: ``Agent.to_dict`` / ``Agent.from_dict``.

Every part is serialized under its name, so an error says which part could not be written
(``Agent.to_dict(): state_schema['notes'].handler: ...``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from handrail.core.serialization import (
    deserialize_callable,
    deserialize_type,
    init_parameters,
    object_from_dict,
    object_to_dict,
    qualified_name,
    serialize_callable,
    serialize_type,
)
from handrail.errors import SerializationError
from handrail.tools.utils import deserialize_tools, serialize_tools

if TYPE_CHECKING:
    from collections.abc import Sequence

    from handrail.components.agents.agent import Agent
    from handrail.hooks.types import Hook
    from handrail.human_in_the_loop.types import ConfirmationStrategy

__all__ = ["agent_init_parameters", "agent_to_dict", "deserialize_strategies", "serialize_strategies"]

_T = TypeVar("_T")


def named_part(where: str, make: Callable[[Any], _T], value: Any) -> _T:
    """``make(value)``; a SerializationError it raises names the Agent's part first (``Agent.to_dict(): tools: ...``).

    Raises:
        SerializationError: ``make``'s, with ``where`` in front.
    """
    try:
        return make(value)
    except SerializationError as exc:
        raise SerializationError(f"Agent.to_dict(): {where}: {exc}") from exc


def serialize_strategies(strategies: Mapping[Any, ConfirmationStrategy] | None) -> dict[str, Any] | None:
    """Serialize strategies; tuple keys become JSON-array strings (``'["a", "b"]'``)."""
    if strategies is None:
        return None
    return {(json.dumps(list(k)) if isinstance(k, tuple) else k): object_to_dict(v) for k, v in strategies.items()}


def deserialize_strategies(data: Mapping[str, Any] | None) -> dict[Any, Any] | None:
    """Inverse of :func:`serialize_strategies` (keys starting with ``[`` become tuples).

    Raises:
        SerializationError: Not a mapping of tool names (or JSON arrays of them) to strategy envelopes.
    """
    if data is None:
        return None
    if not isinstance(data, Mapping) or not all(isinstance(k, str) for k in data):
        raise SerializationError(f"confirmation_strategies must map tool names to strategies, got {data!r:.200}.")
    return {_strategy_key(k): object_from_dict(v) for k, v in data.items()}


def _strategy_key(key: str) -> Any:
    if not key.startswith("["):
        return key
    try:
        names = json.loads(key)
    except ValueError:
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SerializationError(f"confirmation_strategies key {key!r:.100} is not a JSON array of tool names.")
    return tuple(names)


def _state_schema(schema: Any) -> dict[str, Any]:
    """Read a state schema's dict form: ``{key: {"type": "list[str]", "handler": "pkg.fn" | None}}``.

    Raises:
        SerializationError: A value of the wrong shape, naming the key.
    """
    if not isinstance(schema, Mapping):
        raise SerializationError(f"state_schema must be a mapping of keys to {{type, handler}}, got {schema!r:.200}.")
    read: dict[str, Any] = {}
    for key, entry in schema.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            raise SerializationError(f"state_schema[{key!r}] must be {{'type': 'list[str]', ...}}, got {entry!r:.200}.")
        handler = entry.get("handler")
        read[key] = {
            "type": deserialize_type(entry["type"], where=f"state_schema[{key!r}].type"),
            "handler": deserialize_callable(handler, where=f"state_schema[{key!r}].handler") if handler else None,
        }
    return read


def serialize_hooks(hooks: Mapping[str, Sequence[Hook]] | None) -> dict[str, list[dict[str, Any]]] | None:
    """Serialize the hooks mapping (None stays None)."""
    if not hooks:
        return None
    from handrail.hooks import serialize_hooks as serialize

    return serialize(hooks)


def deserialize_hooks(data: Any) -> Any:
    """Rebuild the hooks mapping (None stays None)."""
    if not data:
        return None
    from handrail.hooks import deserialize_hooks as deserialize

    return deserialize(data)


def agent_to_dict(agent: Agent) -> dict[str, Any]:
    """The ``{"type", "init_parameters"}`` envelope of ``agent`` (see ``Agent.to_dict``)."""
    part = named_part
    schema = None
    if agent.state_schema is not None:
        schema = {
            k: {"type": part(f"state_schema[{k!r}].type", serialize_type, v["type"]),
                "handler": part(f"state_schema[{k!r}].handler", serialize_callable, v["handler"])
                if v.get("handler") else None}
            for k, v in agent.state_schema.items()
        }  # fmt: skip
    callback, stores = agent.streaming_callback, (agent.chat_message_store, agent.memory_store)
    data: dict[str, Any] = {
        "type": qualified_name(agent),
        "init_parameters": {
            "chat_generator": part("chat_generator", object_to_dict, agent.chat_generator),
            "tools": part("tools", serialize_tools, agent.tools),
            "system_prompt": agent.system_prompt,
            "exit_conditions": list(agent.exit_conditions),
            "state_schema": schema,
            "max_agent_steps": agent.max_agent_steps,
            "streaming_callback": part("streaming_callback", serialize_callable, callback) if callback else None,
            "raise_on_tool_invocation_failure": agent.raise_on_tool_invocation_failure,
            "tool_invoker_kwargs": dict(agent.tool_invoker_kwargs) if agent.tool_invoker_kwargs else None,
            "tool_concurrency_limit": agent.tool_concurrency_limit,
            "confirmation_strategies": part(
                "confirmation_strategies", serialize_strategies, agent.confirmation_strategies
            ),
            "hooks": part("hooks", serialize_hooks, agent.hooks),
            "chat_message_store": part("chat_message_store", object_to_dict, stores[0]) if stores[0] else None,
            "memory_store": part("memory_store", object_to_dict, stores[1]) if stores[1] else None,
            "user_prompt": agent.user_prompt,
            "required_variables": agent.required_variables,
        },
    }
    from handrail.core._typed_json import check_json  # on first use: keeps `import handrail` fast

    check_json(data, "Agent.to_dict()")  # e.g. an object in tool_invoker_kwargs: named here, not by json.dumps
    return data


def agent_init_parameters(data: Mapping[str, Any], cls: type[Any]) -> dict[str, Any]:
    """The keyword arguments that rebuild an Agent from :func:`agent_to_dict` output (``data`` is not modified)."""
    params = init_parameters(data, cls)
    params["chat_generator"] = object_from_dict(params["chat_generator"])
    if params.get("tools") is not None:
        params["tools"] = deserialize_tools(params["tools"])
    if params.get("state_schema") is not None:
        params["state_schema"] = _state_schema(params["state_schema"])
    if params.get("streaming_callback"):
        params["streaming_callback"] = deserialize_callable(params["streaming_callback"], where="streaming_callback")
    params["confirmation_strategies"] = deserialize_strategies(params.get("confirmation_strategies"))
    params["hooks"] = deserialize_hooks(params.get("hooks"))
    for name in ("chat_message_store", "memory_store"):
        if params.get(name) is not None:
            params[name] = object_from_dict(params[name])
    return params
