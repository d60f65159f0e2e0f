"""The Agent's ``user_prompt``: a Jinja2 template rendered into one user message per run."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.state import RESERVED_KEYS
from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["check_user_prompt", "render_user_prompt", "template_variables"]

_RESERVED_NAMES = frozenset({*RESERVED_KEYS, "messages", "last_message"})
"""State keys the Agent keeps in every run and keys of its result: never template variables."""


@functools.cache
def _environment() -> Any:
    from handrail.core._sandbox import LimitedSandboxedEnvironment

    return LimitedSandboxedEnvironment(autoescape=False, keep_trailing_newline=False)


@functools.lru_cache(maxsize=256)
def _compiled(template: str) -> tuple[Any, frozenset[str]]:
    from jinja2 import TemplateSyntaxError, meta

    env = _environment()
    try:
        ast = env.parse(template)
    except TemplateSyntaxError as exc:
        raise ConfigurationError(
            f"user_prompt is not a valid Jinja2 template (line {exc.lineno}): {exc.message}"
        ) from exc
    return env.from_string(template), frozenset(meta.find_undeclared_variables(ast))


def template_variables(template: str) -> frozenset[str]:
    """The variables a ``user_prompt`` template uses."""
    return _compiled(template)[1]


def check_user_prompt(
    user_prompt: object, required_variables: object, reserved: Iterable[str], run_parameters: Iterable[str]
) -> frozenset[str]:
    """Check ``user_prompt`` and ``required_variables``; return the required variable names.

    Raises:
        ConfigurationTypeError: A non-str template, or required_variables that is neither a list of
            names nor ``"*"``.
        ConfigurationError: Invalid Jinja2; a variable that is also a state key (the user's or a
            reserved one such as ``step_count``), a key of the run's result (``last_message``) or a run
            parameter; required_variables without a template, or naming variables the template does
            not use.
    """
    if user_prompt is None:
        if required_variables:
            raise ConfigurationError("required_variables was given but there is no user_prompt to fill in.")
        return frozenset()
    if not isinstance(user_prompt, str):
        raise ConfigurationTypeError(f"user_prompt must be a Jinja2 template string, got {type(user_prompt).__name__}.")
    variables = template_variables(user_prompt)
    reserved_clash = sorted(variables & (_RESERVED_NAMES - set(run_parameters)))
    if reserved_clash:
        raise ConfigurationError(
            f"user_prompt variables {reserved_clash} are reserved State or result keys of the Agent "
            f"({sorted(_RESERVED_NAMES)}); rename them."
        )
    state_clash = sorted(variables & set(reserved))
    if state_clash:
        raise ConfigurationError(
            f"user_prompt variables {state_clash} are already defined in the state schema; rename them."
        )
    run_clash = sorted(variables & set(run_parameters))
    if run_clash:
        raise ConfigurationError(
            f"user_prompt variables {run_clash} conflict with parameters of Agent.run; rename them."
        )
    if required_variables is None:
        return frozenset()
    if required_variables == "*":
        return variables
    if not isinstance(required_variables, list | tuple) or not all(isinstance(v, str) for v in required_variables):
        raise ConfigurationTypeError(f'required_variables must be a list of names or "*", got {required_variables!r}.')
    unknown = sorted(set(required_variables) - variables)
    if unknown:
        raise ConfigurationError(
            f"required_variables {unknown} are not used by user_prompt (its variables: {sorted(variables)})."
        )
    return frozenset(required_variables)


def render_user_prompt(template: str, values: Mapping[str, Any], required: frozenset[str]) -> ChatMessage:
    """Render the template with ``values`` into one user message.

    Args:
        template: The ``user_prompt`` template.
        values: The variables passed to ``run``; a required variable may be present with None (the
            run refuses it: None means "not given").
        required: The required variables.

    Returns:
        The rendered user message.

    Raises:
        ConfigurationError: A required variable is missing or given as None (both named), or
            rendering failed.
    """
    missing = sorted(v for v in required if v not in values)
    given_none = sorted(v for v in required if v in values and values[v] is None)
    if missing or given_none:
        problems = []
        if missing:
            problems.append(f"Missing required user_prompt variables {missing}; pass them to run() as keywords.")
        if given_none:
            problems.append(
                f"Required user_prompt variables {given_none} were given as None, which run() treats as not given "
                f"(a Pipeline passes None for an input nothing is connected to); pass a value, e.g. '' for empty text."
            )
        raise ConfigurationError(" ".join(problems))
    from handrail.core._sandbox_limits import rendering

    compiled, _ = _compiled(template)
    try:
        with rendering():
            text = compiled.render(**values)
    except Exception as exc:
        raise ConfigurationError(f"user_prompt could not be rendered: {type(exc).__name__}: {exc}") from exc
    return ChatMessage.from_user(text)
