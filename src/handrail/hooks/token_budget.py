"""TokenBudgetHook: stop a run once it has used more tokens than its budget."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationTypeError
from handrail.hooks._base import ReadyMadeHook, check_int
from handrail.hooks.types import HookPoint

__all__ = ["TokenBudgetHook", "total_tokens"]


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def total_tokens(usage: Mapping[str, Any] | None) -> int | float:
    """Return the total tokens of a usage dict (OpenAI's names).

    Args:
        usage: ``{"prompt_tokens": n, "completion_tokens": n, "total_tokens": n, ...}`` or None.

    Returns:
        ``total_tokens`` when it is a number, else ``prompt_tokens + completion_tokens`` (a
        missing one counts as 0).

    Examples:
        >>> total_tokens({"prompt_tokens": 120, "completion_tokens": 30})
        150
    """
    if not usage:
        return 0
    total = _number(usage.get("total_tokens"))
    if total is not None:
        return total
    return (_number(usage.get("prompt_tokens")) or 0) + (_number(usage.get("completion_tokens")) or 0)


class TokenBudgetHook(ReadyMadeHook):
    """Stop the run before the next model call once it has used more tokens than its budget.

    A ``before_llm`` hook. It reads ``state.data["token_usage"]`` (summed over the run's replies)
    and, when its total exceeds ``max_total_tokens``, sets ``stop_run`` to
    ``"token_budget_exceeded"``; the run then ends without calling the model again, with that
    ``exit_reason``. A usage equal to the budget is within it. When another hook already asked to
    stop in this step, the hook leaves that reason in place and does nothing.

    Args:
        max_total_tokens: The budget in tokens (at least 1).
        add_final_message: Also append an assistant message saying the budget was exceeded, so
            that the run's ``last_message`` explains the stop.

    Raises:
        ConfigurationTypeError: When ``max_total_tokens`` is not an int or ``add_final_message``
            not a bool.
        ConfigurationError: When ``max_total_tokens`` is below 1.

    Examples:
        >>> state = State()
        >>> state.data["token_usage"] = {"prompt_tokens": 900, "completion_tokens": 200, "total_tokens": 1100}
        >>> TokenBudgetHook(max_total_tokens=1000, add_final_message=True).run(state)
        >>> state.data["stop_run"]
        'token_budget_exceeded'
        >>> state.data["messages"][-1].text
        'Stopped: this run used 1100 tokens, more than its budget of 1000 tokens.'
    """

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]] = ("before_llm",)
    STOP_REASON: ClassVar[str] = "token_budget_exceeded"
    """The ``stop_run`` value (and so the run's ``exit_reason``)."""

    def __init__(self, max_total_tokens: int, *, add_final_message: bool = False) -> None:
        self.max_total_tokens = check_int("TokenBudgetHook", "max_total_tokens", max_total_tokens, 1)
        """The budget in tokens."""
        if not isinstance(add_final_message, bool):
            raise ConfigurationTypeError(
                f"TokenBudgetHook: add_final_message must be a bool, got {type(add_final_message).__name__}."
            )
        self.add_final_message = add_final_message
        """Whether a stop appends an assistant message explaining it."""

    def run(self, state: State) -> None:
        """Ask the run to stop when its total tokens exceed the budget.

        Args:
            state: The run's live State; reads ``token_usage`` and ``stop_run``, may set
                ``stop_run`` and append to ``messages``.
        """
        if state.data.get("stop_run"):
            return
        used = total_tokens(state.data.get("token_usage"))
        if used <= self.max_total_tokens:
            return
        state.data["stop_run"] = self.STOP_REASON
        if self.add_final_message:
            shown = int(used) if float(used).is_integer() else used
            text = f"Stopped: this run used {shown} tokens, more than its budget of {self.max_total_tokens} tokens."
            state.data["messages"] = [*state.data["messages"], ChatMessage.from_assistant(text)]

    def _init_parameters(self) -> dict[str, Any]:
        return {"max_total_tokens": self.max_total_tokens, "add_final_message": self.add_final_message}
