"""Human in the loop: ask a person before a tool call runs.

The split follows Haystack 2.x: a *policy* decides whether to ask
(:class:`AlwaysAskPolicy`, :class:`NeverAskPolicy`, :class:`AskOncePolicy`, :class:`AskWhenPolicy`), a *UI* asks
(:class:`SimpleConsoleUI`, :class:`RichConsoleUI`), and a *strategy* turns the answer into a
:class:`ToolExecutionDecision` (:class:`BlockingConfirmationStrategy`, alias
:data:`HumanInTheLoopStrategy`). The Agent applies decisions and renders the strategy's
templates (:mod:`handrail.human_in_the_loop.templates`).

:class:`BreakpointConfirmationStrategy` (a :class:`PausingStrategy`) pauses the run instead of asking: the
Agent writes a snapshot and raises :class:`HITLBreakpointException`; a person decides later
(:func:`list_pending`, :func:`record_decision`, :func:`with_decision`,
:func:`get_tool_calls_and_descriptions_from_snapshot`) and the run resumes from the snapshot. In a store that keeps
approval records (the built-in ones), each paused call also has an approval, listed and decided through
:class:`ApprovalService` (:mod:`handrail.human_in_the_loop.service`).
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ApprovalService": "handrail.human_in_the_loop.service",
    "AlwaysAskPolicy": "handrail.human_in_the_loop.policies",
    "AskOncePolicy": "handrail.human_in_the_loop.policies",
    "AskWhenPolicy": "handrail.human_in_the_loop.policies",
    "NeverAskPolicy": "handrail.human_in_the_loop.policies",
    "BlockingConfirmationStrategy": "handrail.human_in_the_loop.strategies",
    "BreakpointConfirmationStrategy": "handrail.human_in_the_loop.breakpoint_strategy",
    "HITLBreakpointException": "handrail.dataclasses.breakpoints",
    "PendingApproval": "handrail.human_in_the_loop.snapshots",
    "get_tool_calls_and_descriptions_from_snapshot": "handrail.human_in_the_loop.snapshots",
    "list_pending": "handrail.human_in_the_loop.snapshots",
    "record_decision": "handrail.human_in_the_loop.snapshots",
    "with_decision": "handrail.human_in_the_loop.snapshots",
    "HumanInTheLoopStrategy": "handrail.human_in_the_loop.strategies",
    "ConfirmationPolicy": "handrail.human_in_the_loop.types",
    "ConfirmationStrategy": "handrail.human_in_the_loop.types",
    "ConfirmationUI": "handrail.human_in_the_loop.types",
    "PausingStrategy": "handrail.human_in_the_loop.types",
    "RichConsoleUI": "handrail.human_in_the_loop.user_interfaces",
    "SimpleConsoleUI": "handrail.human_in_the_loop.user_interfaces",
    "ConfirmationUIResult": "handrail.dataclasses.decisions",
    "ToolExecutionDecision": "handrail.dataclasses.decisions",
}

if _typing.TYPE_CHECKING:
    from handrail.dataclasses.breakpoints import HITLBreakpointException
    from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
    from handrail.human_in_the_loop.breakpoint_strategy import BreakpointConfirmationStrategy
    from handrail.human_in_the_loop.policies import AlwaysAskPolicy, AskOncePolicy, AskWhenPolicy, NeverAskPolicy
    from handrail.human_in_the_loop.service import ApprovalService
    from handrail.human_in_the_loop.snapshots import (
        PendingApproval,
        get_tool_calls_and_descriptions_from_snapshot,
        list_pending,
        record_decision,
        with_decision,
    )
    from handrail.human_in_the_loop.strategies import BlockingConfirmationStrategy, HumanInTheLoopStrategy
    from handrail.human_in_the_loop.types import (
        ConfirmationPolicy,
        ConfirmationStrategy,
        ConfirmationUI,
        PausingStrategy,
    )
    from handrail.human_in_the_loop.user_interfaces import RichConsoleUI, SimpleConsoleUI


__all__ = [
    "AlwaysAskPolicy",
    "ApprovalService",
    "AskOncePolicy",
    "AskWhenPolicy",
    "BlockingConfirmationStrategy",
    "BreakpointConfirmationStrategy",
    "ConfirmationPolicy",
    "ConfirmationStrategy",
    "ConfirmationUI",
    "ConfirmationUIResult",
    "HITLBreakpointException",
    "HumanInTheLoopStrategy",
    "NeverAskPolicy",
    "PausingStrategy",
    "PendingApproval",
    "RichConsoleUI",
    "SimpleConsoleUI",
    "ToolExecutionDecision",
    "get_tool_calls_and_descriptions_from_snapshot",
    "list_pending",
    "record_decision",
    "with_decision",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
