"""The three human-in-the-loop protocols: policy, UI and strategy.

A policy says whether to ask, a UI asks, a strategy turns the answer into a decision; the
split follows Haystack 2.x.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision

__all__ = ["ConfirmationPolicy", "ConfirmationStrategy", "ConfirmationUI"]


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
