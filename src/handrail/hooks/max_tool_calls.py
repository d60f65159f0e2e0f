"""MaxToolCallsHook: refuse tool calls beyond a per-tool limit for the run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.hooks._base import ReadyMadeHook, check_int
from handrail.hooks._messages import pending_calls, refuse_calls
from handrail.hooks.types import HookPoint

__all__ = ["MaxToolCallsHook"]


class MaxToolCallsHook(ReadyMadeHook):
    """Refuse a tool call once its tool has reached its limit of calls in the run.

    A ``before_tool`` hook. For each pending call, in call order, it adds the tool's count so far
    in ``state.data["tool_call_counts"]`` to the calls of that tool it let through earlier in the
    same step; a call that would go beyond the limit is not run and gets the error result
    ``"Tool '<name>' reached its limit of N calls in this run; the call was not run."`` ("1 call"
    for a limit of 1), which the model reads.

    ``tool_call_counts`` counts, as in Haystack, one per tool-result message of the run: a call that
    failed, had invalid arguments or named an unknown tool counts too; a call rejected by an approver,
    or refused by this hook, does not.

    A refused call is laid out as a rejection pair before the message holding the remaining
    calls: ``[..., assistant(refused call), tool(error result), assistant(remaining calls)]``;
    when no call remains the history ends with the last error result and nothing runs.

    Args:
        limits: ``{tool name: most calls per run}`` (0 refuses every call). The key ``"*"`` sets
            the limit of every tool not named; tools without a limit are never refused.

    Raises:
        ConfigurationTypeError: When ``limits`` is not a dict of str to int.
        ConfigurationError: When it is empty or a limit is negative.

    Examples:
        >>> from handrail.dataclasses import ChatMessage, ToolCall
        >>> calls = [ToolCall(tool_name="search", arguments={"q": q}, id=f"call_{q}") for q in "ab"]
        >>> state = State()
        >>> state.data["tool_call_counts"] = {"search": 2}
        >>> state.data["messages"] = [ChatMessage.from_assistant(tool_calls=calls)]
        >>> MaxToolCallsHook({"search": 3}).run(state)
        >>> [(m.role.value, [c.id for c in m.tool_calls]) for m in state.data["messages"]]
        [('assistant', ['call_b']), ('tool', []), ('assistant', ['call_a'])]
        >>> state.data["messages"][1].tool_call_result.result
        "Tool 'search' reached its limit of 3 calls in this run; the call was not run."
    """

    allowed_hook_points: ClassVar[tuple[HookPoint, ...]] = ("before_tool",)

    def __init__(self, limits: dict[str, int]) -> None:
        if not isinstance(limits, Mapping) or not all(isinstance(k, str) for k in limits):
            raise ConfigurationTypeError(
                f"MaxToolCallsHook: limits must be a dict of tool name to int, got {limits!r}."
            )
        if not limits:
            raise ConfigurationError("MaxToolCallsHook: limits is empty, so no call would ever be refused.")
        self.limits: dict[str, int] = {
            k: check_int("MaxToolCallsHook", f"limits[{k!r}]", v, 0) for k, v in limits.items()
        }
        """``{tool name or "*": most calls per run}``."""

    def limit_for(self, tool_name: str) -> int | None:
        """Return the limit of ``tool_name`` (its own, else ``"*"``), or None when it has none."""
        return self.limits.get(tool_name, self.limits.get("*"))

    @staticmethod
    def message(tool_name: str, limit: int) -> str:
        """Return the error result text of a refused call ("1 call", "N calls")."""
        calls = "call" if limit == 1 else "calls"
        return f"Tool '{tool_name}' reached its limit of {limit} {calls} in this run; the call was not run."

    def run(self, state: State) -> None:
        """Refuse the pending calls beyond their tool's limit.

        Args:
            state: The run's live State; reads ``tool_call_counts``, may replace ``messages``.
        """
        messages = state.data["messages"]
        counts: Mapping[str, int] = state.data.get("tool_call_counts") or {}
        allowed: dict[str, int] = {}
        refusals: dict[int, str] = {}
        for i, call in enumerate(pending_calls(messages)):
            limit = self.limit_for(call.tool_name)
            if limit is None:
                continue
            if counts.get(call.tool_name, 0) + allowed.get(call.tool_name, 0) >= limit:
                refusals[i] = self.message(call.tool_name, limit)
            else:
                allowed[call.tool_name] = allowed.get(call.tool_name, 0) + 1
        if refusals:
            state.data["messages"] = refuse_calls(messages, refusals)

    def _init_parameters(self) -> dict[str, Any]:
        return {"limits": dict(self.limits)}
