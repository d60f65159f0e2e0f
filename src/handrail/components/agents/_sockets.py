"""The Agent's pipeline sockets: run's parameters plus state-schema keys and ``user_prompt`` variables."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from handrail.core.component import MISSING, component, input_sockets
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent

__all__ = ["SOCKET_ATTRIBUTES", "given_arguments", "refresh_sockets"]

SOCKET_ATTRIBUTES = frozenset({"state_schema", "user_prompt", "required_variables"})
"""Agent attributes whose reassignment changes the sockets."""

_RUN_OUTPUTS: dict[str, Any] = {
    "messages": list[ChatMessage],
    "last_message": ChatMessage,
    "step_count": int,
    "token_usage": dict[str, Any],
    "tool_call_counts": dict[str, int],
    "exit_reason": str,
}


def _state_types(state_schema: Any) -> dict[str, Any]:
    if not isinstance(state_schema, Mapping):
        return {}
    return {
        key: entry.get("type", Any) if isinstance(entry, Mapping) else Any
        for key, entry in state_schema.items()
        if isinstance(key, str)
    }


def _prompt_variables(user_prompt: object, required_variables: object) -> dict[str, bool]:
    """Map each template variable to whether it is required; {} for no (or an invalid) template."""
    if not isinstance(user_prompt, str):
        return {}
    from handrail.components.agents._prompt import template_variables

    try:
        variables = template_variables(user_prompt)
    except ConfigurationError:  # an invalid template: the next run reports it
        return {}
    if required_variables == "*":
        required = set(variables)
    elif isinstance(required_variables, list | tuple):
        required = {v for v in required_variables if isinstance(v, str)}
    else:
        required = set()
    return {name: name in required for name in sorted(variables)}


def refresh_sockets(agent: Agent) -> None:
    """Set the agent's input and output sockets from its current configuration.

    Inputs: every parameter of ``Agent.run`` (``messages`` mandatory), each state-schema key (its schema
    type, default None) and each ``user_prompt`` variable (``Any``; mandatory when required, else default
    None). Outputs: ``messages``, ``last_message``, the state keys, ``step_count``, ``token_usage``,
    ``tool_call_counts`` and ``exit_reason``. Values a run would reject (an invalid template) add no
    sockets; the run reports them.

    Args:
        agent: The Agent.
    """
    signature = input_sockets(type(agent))
    state = _state_types(agent.state_schema)
    variables = _prompt_variables(agent.user_prompt, agent.required_variables)
    component.set_input_types(agent)
    for socket in signature.values():
        component.set_input_type(agent, socket.name, socket.type, socket.default)
    for key, key_type in state.items():
        if key not in signature:
            component.set_input_type(agent, key, key_type, None)
    for name, required in variables.items():
        if name not in signature and name not in state:
            component.set_input_type(agent, name, Any, MISSING if required else None)
    outputs = dict(_RUN_OUTPUTS)
    for key, key_type in state.items():
        outputs.setdefault(key, key_type)
    component.set_output_types(agent, **outputs)


def given_arguments(agent: Agent, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Drop the None values of state keys and optional ``user_prompt`` variables: None means "not given".

    A Pipeline passes every optional input socket its default (None) when nothing is connected to it;
    such a key must neither start State with None nor render as ``"None"`` in the prompt, nor count as
    an argument when resuming from a snapshot. Other names are kept so that the run still reports them;
    so is a required variable given as None, so that the run names it as given as None rather than
    as missing.

    Args:
        agent: The Agent.
        kwargs: The run's extra keyword arguments.

    Returns:
        A new dict without those None values.
    """
    variables = _prompt_variables(agent.user_prompt, agent.required_variables)
    optional = set(_state_types(agent.state_schema)) | {name for name, required in variables.items() if not required}
    return {k: v for k, v in kwargs.items() if v is not None or k not in optional}
