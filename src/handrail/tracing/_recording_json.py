"""The JSON of a recording's lines: secrets masked and the redaction applied, results, a run's input."""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from handrail.components.effects import ToolOutcome, to_json
from handrail.core._secret_values import mask_data, mask_secrets

__all__ = [
    "Redact",
    "agent_redaction",
    "chain",
    "clean",
    "default_redact",
    "describe",
    "masked_for_display",
    "redactor",
    "replay_redaction",
    "result_json",
    "run_input",
]

Redact = Callable[[str], str]


def version() -> str | None:
    """Handrail's version (the package is loaded: this module is inside it; read, not imported, to keep layers)."""
    version = getattr(sys.modules.get("handrail"), "__version__", None)
    return version if isinstance(version, str) else None


def now() -> str:
    return datetime.now(UTC).isoformat()


def redactor(redact: Any, owner: str = "redact") -> Redact | None:
    """``redact`` as a callable: a RedactionHook's ``redact``, a callable, or None (no redaction)."""
    if redact is None:
        return None
    method = getattr(redact, "redact", None)  # a RedactionHook
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(redact) and not isinstance(redact, type):
        return redact  # type: ignore[no-any-return]
    from handrail.errors import ConfigurationTypeError

    raise ConfigurationTypeError(f"{owner} must be True, False, a callable str -> str or a RedactionHook, got "
                                 f"{type(redact).__name__}.")  # fmt: skip


@functools.cache
def default_redact() -> Redact:
    """The ``redact`` of a :class:`~handrail.hooks.RedactionHook` with its default patterns (API keys, tokens)."""
    from handrail.hooks.redaction import RedactionHook

    return RedactionHook().redact


def describe(redact: Any) -> Any:
    """How a recording was redacted, for its header: ``"default"``, ``{"patterns": [...]}`` or ``"custom"``."""
    from handrail.hooks.redaction import RedactionHook

    if isinstance(redact, RedactionHook):
        return "default" if redact.patterns is None else {"patterns": list(redact.patterns)}
    return "custom"


def chain(steps: list[Redact]) -> Redact | None:
    """One ``redact`` applying ``steps`` in order (None for no step)."""
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def redact(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return redact


def replay_redaction(header: Mapping[str, Any], agent: Any) -> Redact | None:
    """The ``redact`` a recording's header says it was written with (the agent's hook is the replayed one's)."""
    from handrail.hooks.redaction import RedactionHook

    described = header.get("redaction")
    if not isinstance(described, list):  # a recording of before the header said how: the agent's hook, if any
        return agent_redaction(agent) if header.get("redacted") else None
    steps: list[Redact] = []
    for step in described:
        if step == "default":
            steps.append(default_redact())
        elif isinstance(step, dict) and isinstance(step.get("patterns"), list):
            steps.append(RedactionHook(step["patterns"]).redact)
        elif step in ("agent", "custom"):  # a callable cannot be written down: the replayed agent's hook
            own = agent_redaction(agent)
            if own is not None and own not in steps:
                steps.append(own)
    return chain(steps)


def agent_redaction(agent: Any) -> Redact | None:
    """The ``redact`` of the Agent's first RedactionHook (at any hook point), or None."""
    from handrail.hooks.redaction import RedactionHook

    for hooks in (getattr(agent, "hooks", None) or {}).values():
        for hook in hooks or ():
            if isinstance(hook, RedactionHook):
                return hook.redact
    return None


def masked_for_display(value: Any) -> Any:
    """``value`` with known secret values and the default patterns masked: what a divergence report shows."""
    return clean(value, default_redact())


def clean(value: Any, redact: Redact | None) -> Any:
    """``value`` (JSON data) with known secret values masked in every string, then ``redact`` applied to it."""
    if isinstance(value, str):
        text = mask_secrets(value)
        return redact(text) if redact is not None else text
    if isinstance(value, dict):
        return {str(k): clean(v, redact) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, redact) for v in value]
    return value


def result_json(result: Any) -> list[Any] | None:
    """The JSON of an effect's result: one item per reply, outcome or decision (None for no result)."""
    if isinstance(result, list | tuple):
        return [_outcome_json(item) if type(item) is ToolOutcome else to_json(item) for item in result]
    return None


def _outcome_json(outcome: ToolOutcome) -> dict[str, Any] | None:
    """A tool outcome's JSON, its value's secrets masked first (the typed JSON refuses a secret's value)."""
    if not outcome.ok:
        return to_json(outcome)
    try:
        return to_json(dataclasses.replace(outcome, value=mask_data(outcome.value)))
    except ValueError:  # a value of a type the typed JSON cannot write, or a secret inside an object: its text
        written = to_json(dataclasses.replace(outcome, value=mask_secrets(str(outcome.value))))
        assert written is not None
        return {**written, "value_as_text": True}


def error_text(error: BaseException | None) -> str | None:
    return None if error is None else f"{type(error).__name__}: {error}"


def tool_names(agent: Any) -> list[str]:
    from handrail.tools.utils import flatten_tools

    try:
        return [str(t.name) for t in flatten_tools(agent.tools)]
    except Exception:  # a toolset that lists its tools only once warmed up
        return []


def run_input(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh run's input as JSON: its messages, system prompt, generation settings and state / template values."""
    from handrail.core import _typed_json as typed_json
    from handrail.core.secret import Secret

    given: dict[str, Any] = {"messages": [m.to_dict() for m in arguments.get("messages") or []]}
    for name in ("system_prompt", "generation_kwargs", "chat_message_store_kwargs", "memory_store_kwargs"):
        if arguments.get(name) is not None:
            given[name] = arguments[name]
    values: dict[str, Any] = {}
    left_out: list[str] = []
    for key, value in (arguments.get("kwargs") or {}).items():
        try:
            if isinstance(value, Secret):
                raise TypeError("a Secret is never recorded")
            values[key] = typed_json.encode_value(value, f"kwargs[{key!r}]")
        except Exception:
            left_out.append(key)
    if values:
        given["kwargs"] = values
    if left_out:
        given["not_recorded"] = sorted(left_out)
    return given
