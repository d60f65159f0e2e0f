"""Hooks: code the Agent runs at fixed points of a run, with the run's State.

Pass them as ``Agent(hooks={point: [hook, ...]})``; the points are ``before_run``,
``before_llm``, ``before_tool``, ``after_tool``, ``on_exit`` and ``after_run``
(:data:`HOOK_POINTS`). A hook is any object with a sync ``run(state)`` (:class:`Hook`), or a function
decorated with :func:`hook`. Hooks at one point run in list order. Ready-made hooks:
:class:`TokenBudgetHook`, :class:`ToolResultTruncationHook`, :class:`RedactionHook`,
:class:`MaxToolCallsHook`.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "HOOK_POINTS": "handrail.hooks.types",
    "Hook": "handrail.hooks.types",
    "HookPoint": "handrail.hooks.types",
    "FunctionHook": "handrail.hooks.function_hook",
    "hook": "handrail.hooks.function_hook",
    "deserialize_hooks": "handrail.hooks.validation",
    "serialize_hooks": "handrail.hooks.validation",
    "validate_hooks": "handrail.hooks.validation",
    "MaxToolCallsHook": "handrail.hooks.max_tool_calls",
    "RedactionHook": "handrail.hooks.redaction",
    "TokenBudgetHook": "handrail.hooks.token_budget",
    "ToolResultTruncationHook": "handrail.hooks.truncation",
}

if _typing.TYPE_CHECKING:
    from handrail.hooks.function_hook import FunctionHook, hook
    from handrail.hooks.max_tool_calls import MaxToolCallsHook
    from handrail.hooks.redaction import RedactionHook
    from handrail.hooks.token_budget import TokenBudgetHook
    from handrail.hooks.truncation import ToolResultTruncationHook
    from handrail.hooks.types import HOOK_POINTS, Hook, HookPoint
    from handrail.hooks.validation import deserialize_hooks, serialize_hooks, validate_hooks


__all__ = [
    "HOOK_POINTS",
    "FunctionHook",
    "Hook",
    "HookPoint",
    "MaxToolCallsHook",
    "RedactionHook",
    "TokenBudgetHook",
    "ToolResultTruncationHook",
    "deserialize_hooks",
    "hook",
    "serialize_hooks",
    "validate_hooks",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
