"""The three human-in-the-loop protocols: policy, UI and strategy.

A policy says whether to ask, a UI asks, a strategy turns the answer into a decision; the
split follows Haystack 2.x.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard, runtime_checkable

from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import ConfigurationTypeError
from handrail.human_in_the_loop._approval_settings import (
    MAX_EXPIRES_AFTER,
    ApprovalSettings,
    approval_settings,
    check_approval_settings,
)

__all__ = [
    "MAX_EXPIRES_AFTER",
    "ApprovalSettings",
    "ConfirmationPolicy",
    "ConfirmationStrategy",
    "ConfirmationUI",
    "PausingStrategy",
    "approval_settings",
    "check_approval_settings",
    "check_policy",
    "is_pausing_strategy",
    "refuse_class",
]


@runtime_checkable
class ConfirmationPolicy(Protocol):
    """Decides whether a person is asked before a tool call runs."""

    def should_ask(self, tool_name: str, tool_description: str, tool_params: dict[str, Any]) -> bool:
        """Return True to ask a person about this call."""
        ...

    def update_after_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        confirmation_result: ConfirmationUIResult,
    ) -> None:
        """Learn from the answer (e.g. remember a confirmed argument set)."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialize the configuration (never remembered decisions)."""
        ...


@runtime_checkable
class ConfirmationUI(Protocol):
    """Asks a person about one tool call (console, web page, chat, ...)."""

    def get_user_confirmation(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        """Show the call and return the person's answer.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The model's arguments (editable).
            injected_params: Values the tool reads from State, shown read-only (an edit is refused).
        """
        ...


@runtime_checkable
class ConfirmationStrategy(Protocol):
    """Turns a tool call into a decision (asking a person where its policy says so)."""

    def run(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Return the decision for one call."""
        ...

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
    ) -> ToolExecutionDecision:
        """Async twin of :meth:`run`; must not block the event loop."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialize to the ``{type, init_parameters}`` envelope."""
        ...


@runtime_checkable
class PausingStrategy(Protocol):
    """A confirmation strategy that pauses the run instead of deciding (``BreakpointConfirmationStrategy``).

    The Agent does not call it: it holds the calls the strategy answers, runs the step's other calls, writes a
    snapshot into :attr:`snapshot_store` (or a directory, :attr:`snapshot_file_path`) with :attr:`metadata`, and
    raises ``HITLBreakpointException``; somebody decides later, and ``handrail.resume`` continues the run.
    A strategy is one when it has these attributes and :attr:`pauses_run` is True
    (:func:`is_pausing_strategy`).
    """

    pauses_run: bool
    """True: the run pauses for this strategy's calls (a class attribute, typically)."""
    snapshot_file_path: str | None
    """The directory snapshots are written into, or None when :attr:`snapshot_store` names the store."""
    snapshot_store: Any
    """The SnapshotStore object or store URL snapshots are written into, or None for the directory."""
    metadata: dict[str, Any]
    """JSON data copied into the metadata of every snapshot this strategy causes."""


def is_pausing_strategy(strategy: object) -> TypeGuard[PausingStrategy]:
    """Whether the Agent pauses the run for ``strategy``'s calls (a :class:`PausingStrategy`, ``pauses_run`` True)."""
    return isinstance(strategy, PausingStrategy) and strategy.pauses_run is True


def refuse_class(value: object, name: str, what: str) -> None:
    """Refuse a class passed where an object belongs (``AlwaysAskPolicy`` for ``AlwaysAskPolicy()``)."""
    if isinstance(value, type):
        raise ConfigurationTypeError(
            f"{name} is the class {value.__name__!r}, not {what} object; pass an instance: {value.__name__}()."
        )


def check_policy(policy: object, methods: tuple[str, ...] = ("should_ask", "update_after_confirmation")) -> None:
    """Refuse a ``confirmation_policy`` that is a class, or lacks one of ``methods`` (those its strategy calls)."""
    refuse_class(policy, "confirmation_policy", "a policy")
    missing = [m for m in methods if not callable(getattr(policy, m, None))]
    if missing:
        raise ConfigurationTypeError(
            f"confirmation_policy must be a ConfirmationPolicy; {type(policy).__name__} has no {', '.join(missing)}."
        )
