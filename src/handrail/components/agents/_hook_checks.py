"""What a hook left in the reserved State keys, checked after each hook (both drivers call this).

Hooks may rewrite ``messages`` and set the run's flags, but a wrong type there would fail later,
far from the hook, with an error that names neither the hook nor the point (or not at all: a str in
``messages`` reaches the model). Only points with hooks pay for the check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from handrail.components.agents._config import first_non_message
from handrail.errors import RunError

if TYPE_CHECKING:
    from handrail.hooks.types import Hook

__all__ = ["check_after_hook"]

_ABSENT = object()


def _is_count(value: Any) -> bool:
    return type(value) is int or (isinstance(value, int) and not isinstance(value, bool))


def _messages_error(messages: Any) -> tuple[str, Any, str] | None:
    """``(where, value, rule)`` for a ``messages`` that is not a list of ChatMessage, else None."""
    if not isinstance(messages, list):
        return "", messages, "it must be a list of ChatMessage"
    bad = first_non_message(messages)
    return None if bad is None else (f"[{bad}]", messages[bad], "it must be a ChatMessage")


def _counts_ok(counts: Any) -> bool:
    return isinstance(counts, dict) and all(type(k) is str and _is_count(v) and v >= 0 for k, v in counts.items())


_RULES: tuple[tuple[str, Callable[[Any], bool], str], ...] = (
    ("step_count", lambda v: _is_count(v) and v >= 0, "it must be an int ≥ 0 (the model calls made so far)"),
    ("tool_call_counts", _counts_ok, "it must be a dict of tool name to int ≥ 0"),
    ("token_usage", lambda v: isinstance(v, dict), "it must be a dict (the summed usage of the replies)"),
    ("stop_run", lambda v: v is None or (isinstance(v, str) and v.strip() != ""),
     "it must be None or a str that is not blank (the reason the run stops, which becomes its exit_reason)"),
    ("continue_run", lambda v: v is True or v is False, "it must be a bool"),
    ("exit_reason", lambda v: v is None or isinstance(v, str), "it must be None or a str"),
)  # fmt: skip


_DEFAULT_REPR: Any = object.__repr__


def _hook_label(hook: Hook) -> str:
    """The hook's own ``repr`` (ready-made and function hooks show their settings), else its class name."""
    own: Any = type(hook).__repr__
    if own is _DEFAULT_REPR:
        return type(hook).__name__
    return f"{hook!r:.120}"


def check_after_hook(hook: Hook, point: str, data: dict[str, Any]) -> None:
    """Check the reserved State keys after ``hook`` ran at ``point``.

    Args:
        hook: The hook that just ran (named in the error).
        point: Its hook point.
        data: ``state.data`` of the run.

    Raises:
        RunError: ``messages`` is not a list of ChatMessage (subclasses allowed), ``step_count`` is not
            an int ≥ 0, ``tool_call_counts`` not a dict of str to int ≥ 0, ``token_usage`` not a dict,
            ``stop_run`` neither None nor a str that is not blank, ``continue_run`` not a bool, ``exit_reason``
            neither None nor a str, or one of these keys was removed. The message names the hook,
            the point, the key and what it holds.
    """
    found = _messages_error(data.get("messages", _ABSENT))
    if found is not None:
        where, value, rule = found
        _fail(hook, point, "messages", where, value, rule)
    for key, ok, rule in _RULES:
        value = data.get(key, _ABSENT)
        if not ok(value):
            _fail(hook, point, key, "", value, rule)


def _fail(hook: Hook, point: str, key: str, where: str, value: object, rule: str) -> None:
    ran = f"After the {point} hook {_hook_label(hook)} ran, state.data[{key!r}]"
    if value is _ABSENT:
        raise RunError(
            f"{ran} is missing; the Agent needs it for the rest of the run (change its value, never delete it)."
        )
    raise RunError(f"{ran}{where} holds {value!r:.200} ({type(value).__name__}); {rule}.")
