"""Human in the loop: ask a person before a tool call runs.

The split follows Haystack 2.x: a *policy* decides whether to ask
(:class:`AlwaysAskPolicy`, :class:`NeverAskPolicy`, :class:`AskOncePolicy`), a *UI* asks
(:class:`SimpleConsoleUI`, :class:`RichConsoleUI`), and a *strategy* turns the answer into a
:class:`ToolExecutionDecision` (:class:`BlockingConfirmationStrategy`, alias
:data:`HumanInTheLoopStrategy`). The Agent applies decisions and renders the strategy's
templates (:mod:`handrail.human_in_the_loop.templates`).
"""

import importlib as _importlib
import typing as _typing

_EXPORTS = {
    "AlwaysAskPolicy": "handrail.human_in_the_loop.policies",
    "AskOncePolicy": "handrail.human_in_the_loop.policies",
    "NeverAskPolicy": "handrail.human_in_the_loop.policies",
    "BlockingConfirmationStrategy": "handrail.human_in_the_loop.strategies",
    "HumanInTheLoopStrategy": "handrail.human_in_the_loop.strategies",
    "ConfirmationPolicy": "handrail.human_in_the_loop.types",
    "ConfirmationStrategy": "handrail.human_in_the_loop.types",
    "ConfirmationUI": "handrail.human_in_the_loop.types",
    "RichConsoleUI": "handrail.human_in_the_loop.user_interfaces",
    "SimpleConsoleUI": "handrail.human_in_the_loop.user_interfaces",
    "ConfirmationUIResult": "handrail.dataclasses.decisions",
    "ToolExecutionDecision": "handrail.dataclasses.decisions",
}

if _typing.TYPE_CHECKING:
    from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
    from handrail.human_in_the_loop.policies import AlwaysAskPolicy, AskOncePolicy, NeverAskPolicy
    from handrail.human_in_the_loop.strategies import BlockingConfirmationStrategy, HumanInTheLoopStrategy
    from handrail.human_in_the_loop.types import ConfirmationPolicy, ConfirmationStrategy, ConfirmationUI
    from handrail.human_in_the_loop.user_interfaces import RichConsoleUI, SimpleConsoleUI


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])


__all__ = [
    "AlwaysAskPolicy",
    "AskOncePolicy",
    "BlockingConfirmationStrategy",
    "ConfirmationPolicy",
    "ConfirmationStrategy",
    "ConfirmationUI",
    "ConfirmationUIResult",
    "HumanInTheLoopStrategy",
    "NeverAskPolicy",
    "RichConsoleUI",
    "SimpleConsoleUI",
    "ToolExecutionDecision",
]
