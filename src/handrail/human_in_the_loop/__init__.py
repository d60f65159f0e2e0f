"""Human in the loop: ask a person before a tool call runs.

The split follows Haystack 2.x: a *policy* decides whether to ask
(:class:`AlwaysAskPolicy`, :class:`NeverAskPolicy`, :class:`AskOncePolicy`), a *UI* asks
(:class:`SimpleConsoleUI`, :class:`RichConsoleUI`), and a *strategy* turns the answer into a
:class:`ToolExecutionDecision` (:class:`BlockingConfirmationStrategy`, alias
:data:`HumanInTheLoopStrategy`). The Agent applies decisions and renders the strategy's
templates (:mod:`handrail.human_in_the_loop.templates`).
"""

import typing as _typing

from handrail.core.lazy import lazy_exports as _lazy_exports

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

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
