"""The agent loop as a sans-I/O step machine (DESIGN.md §2).

:func:`agent_machine` is a generator that yields effects — :class:`CallModel`, and the tool
step's ``RunCalls`` / ``Emit`` — and receives their results. It holds every rule of the
loop (ids, validation, exits, counters); the drivers in ``_drivers`` only execute effects.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from handrail.components.agents._confirm import Approvals, ConfirmCalls, rewrite_step
from handrail.components.tools._effects import Emit, RunCalls
from handrail.components.tools._step import ToolStepOptions, repair_call_ids, tool_step
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.dataclasses.state import State
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

__all__ = ["CallModel", "Effect", "RunPlan", "agent_machine"]

_STOP_FINISH_REASONS = ("length", "content_filter")


@dataclass(slots=True)
class CallModel:
    """Ask the chat generator for a reply; answer with the list of reply messages."""

    messages: list[ChatMessage]
    """The model input (a copy; the generator may keep it)."""
    tools: list[Tool] | None
    """The tools offered, or None when the run has none."""


Effect = CallModel | RunCalls | Emit | ConfirmCalls


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What one run needs to know, fixed when the run starts."""

    tools: list[Tool | Toolset]
    """The run's tools as configured (re-flattened each step when a Toolset is present)."""
    static_tools: list[Tool] | None
    """The flattened tools when no Toolset is present (flattened once), else None."""
    static_by_name: dict[str, Tool]
    """``static_tools`` by name (empty when tools are re-flattened each step)."""
    exit_tools: frozenset[str]
    """Tool names that end the run after they ran without error."""
    max_agent_steps: int
    """Model calls allowed."""
    step_options: ToolStepOptions
    """Options of every tool step (its ``gate`` is the approvals' gate when strategies are set)."""
    approvals: Approvals | None = None
    """Per-run approval state, when the Agent has confirmation strategies."""


def _add_usage(total: dict[str, Any], usage: Mapping[str, Any]) -> None:
    """Add every numeric field of ``usage`` into ``total`` (nested dicts recursively)."""
    for key, value in usage.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            total[key] = total.get(key, 0) + value
        elif isinstance(value, Mapping):
            _add_usage(total.setdefault(key, {}), value)


def _with_calls(message: ChatMessage, calls: list[ToolCall]) -> ChatMessage:
    replaced = iter(calls)
    content = [next(replaced) if type(p) is ToolCall else p for p in message._content]
    return ChatMessage(message.role, content, message.name, message.meta)


def _take_replies(replies: list[ChatMessage], state: State, seen: set[str]) -> tuple[list[ChatMessage], list[ToolCall]]:
    """Record usage and repair call ids; return the (possibly rewritten) replies and their calls."""
    usage_total = state.data["token_usage"]
    out: list[ChatMessage] = []
    calls: list[ToolCall] = []
    for reply in replies:
        usage = reply.meta.get("usage") if reply.meta else None
        if isinstance(usage, Mapping):
            _add_usage(usage_total, usage)
        own = reply.tool_calls if reply.role is ChatRole.ASSISTANT else []
        if own:
            fixed = repair_call_ids(own, seen)
            if fixed is not own and any(a is not b for a, b in zip(own, fixed, strict=True)):
                reply = _with_calls(reply, fixed)
            calls.extend(fixed)
        out.append(reply)
    return out, calls


def _reply_exit(replies: list[ChatMessage]) -> str | None:
    """Exit reason for a reply without tool calls: non-empty text, or a length/content_filter stop."""
    if not replies:
        return None
    last = replies[-1]
    reason = last.meta.get("finish_reason")
    if reason in _STOP_FINISH_REASONS:
        return str(reason)
    return "text" if any(t.strip() for t in last.texts) else None


def _tool_exit(results: list[ChatMessage], exit_tools: frozenset[str]) -> str | None:
    """The first exit tool in call order, unless any exit tool of the step errored."""
    first = None
    for message in results:
        result = message.tool_call_result
        if result is None or result.origin.tool_name not in exit_tools:
            continue
        if result.error:
            return None
        first = first or result.origin.tool_name
    return first


def _record_results(
    messages: list[ChatMessage],
    replies: list[ChatMessage],
    results: list[ChatMessage],
    counts: dict[str, int],
    approvals: Approvals | None,
) -> None:
    """Append the step's results (re-laying out the step after rejections or edits) and count the calls run."""
    applied = approvals.applied if approvals is not None else None
    rejected: set[str] = set()
    if applied:
        rejected = {cid for cid, a in applied.items() if a.kind == "reject"}
        if any(a.kind != "confirm" for a in applied.values()):
            del messages[len(messages) - len(replies) :]
            messages.extend(rewrite_step(replies, results, applied))
        else:
            messages.extend(results)
        applied.clear()
    else:
        messages.extend(results)
    for message in results:
        origin = message._content[0].origin  # type: ignore[union-attr]
        if origin.id not in rejected:
            counts[origin.tool_name] = counts.get(origin.tool_name, 0) + 1


def agent_machine(plan: RunPlan, state: State) -> Generator[Effect, Any, None]:
    """Run the agent loop on ``state`` until an exit condition holds.

    One step is one model call plus the tool calls it requested:

    1. Flatten the tools (a dynamic Toolset may have grown) and yield ``CallModel``.
    2. Add the replies' usage to ``token_usage``; give calls with a missing, empty or repeated id
       a unique one (the reply is rewritten so call and result agree); append the replies.
    3. A run with no tools ends after this one reply (reason ``"text"``).
    4. A reply without tool calls ends the run when it has non-empty text (``"text"``) or stopped
       for ``length`` / ``content_filter``; an empty reply is not an answer: next step.
    5. Otherwise run the calls (``tool_step``; calls with a confirmation strategy are decided first
       and rejected or edited as decided), append one result per call (laid out as DESIGN.md §3.9
       when a call was rejected or edited), count the calls run, and end the run when an exit tool
       ran (and no exit tool of the step errored).
    6. When ``max_agent_steps`` model calls were made, end with ``"max_agent_steps"``.

    The outcome is written into ``state`` (messages, counters, ``exit_reason``).
    """
    data = state.data
    messages: list[ChatMessage] = data["messages"]
    counts: dict[str, int] = data["tool_call_counts"]
    seen: set[str] = set()
    while data["step_count"] < plan.max_agent_steps:
        tools = plan.static_tools if plan.static_tools is not None else flatten_tools(plan.tools)
        replies: list[ChatMessage] = yield CallModel(list(messages), tools or None)
        replies, calls = _take_replies(replies, state, seen)
        messages.extend(replies)
        if not calls or not plan.tools:
            data["step_count"] += 1
            reason = "text" if not plan.tools else _reply_exit(replies)
            if reason is not None:
                data["exit_reason"] = reason
                return
            continue
        by_name = plan.static_by_name if plan.static_tools is not None else {t.name: t for t in tools}
        results = yield from tool_step(calls, by_name, state, plan.step_options)
        _record_results(messages, replies, results, counts, plan.approvals)
        data["step_count"] += 1
        reason = _tool_exit(results, plan.exit_tools) if plan.exit_tools else None
        if reason is not None:
            data["exit_reason"] = reason
            return
    data["exit_reason"] = "max_agent_steps"
