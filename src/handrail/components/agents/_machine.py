"""The agent loop as a sans-I/O step machine.

:func:`agent_machine` is a generator that yields effects (:mod:`handrail.components.effects`: data only) and
receives their results. It holds every rule of the loop (ids, validation, exits, counters) and writes the run's
state (:class:`~handrail.components.agents._run_state.RunState`); the drivers only execute effects, through the
run's context.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handrail.components.agents._confirm import Approvals, rewrite_step
from handrail.components.agents._replies import checked_replies, reply_exit, take_replies, with_calls
from handrail.components.agents._run_state import RunState
from handrail.components.effects import CallModel, Effect, Finish, HookPoint, LoadStores, Pause, Position, RunHooks
from handrail.components.tools._step import ToolStepOptions, repair_calls, tool_step
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import flatten_tools

if TYPE_CHECKING:
    from handrail.components.agents._checkpoints import Checkpoints

_LOG = logging.getLogger("handrail.components.agents")
"""Runtime conditions of agent runs (the names Haystack logs at WARNING, under handrail's own logger)."""

__all__ = ["HookTable", "RunParts", "RunPlan", "agent_machine"]


@dataclass(frozen=True, slots=True)
class HookTable:
    """The hooks of a run, per point (empty tuples cost nothing per step)."""

    before_run: tuple[Any, ...] = ()
    before_llm: tuple[Any, ...] = ()
    before_tool: tuple[Any, ...] = ()
    after_tool: tuple[Any, ...] = ()
    on_exit: tuple[Any, ...] = ()
    after_run: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What one run needs to know, fixed when the run starts (configuration only: the run's state is a RunState)."""

    tools: list[Tool | Toolset]
    """The run's tools as configured (re-flattened each step when a Toolset is present)."""
    static_tools: list[Tool] | None
    """The flattened tools when no Toolset is present (flattened once), else None."""
    static_by_name: Mapping[str, Tool]
    """``static_tools`` by name (empty when tools are re-flattened each step)."""
    static_names: tuple[str, ...]
    """The names of ``static_tools`` (empty when tools are re-flattened each step)."""
    exit_tools: frozenset[str]
    """Tool names that end the run after they ran without error."""
    max_agent_steps: int
    """Model calls allowed."""
    step_options: ToolStepOptions
    """Options of every tool step (its ``gate`` is the approvals' gate when strategies are set)."""
    hooks: HookTable = HookTable()
    """The run's hooks per point."""
    model_name: str = "chat_generator"
    """The chat generator's class name (named in the errors about its replies)."""


@dataclass(frozen=True, slots=True)
class RunParts:
    """The objects of one run that keep their own bookkeeping: approvals, checkpoints, stores."""

    approvals: Approvals | None = None
    """How calls are decided, when the Agent has confirmation strategies or calls are recorded."""
    checkpoints: Checkpoints | None = None
    """Breakpoints, pauses and the durable record, when the run has any."""
    stores: Any = None
    """The chat / memory stores this run writes after it completes (a ``StoreUse``), or None."""


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
    applied: dict[str, Any],
) -> None:
    """Append the step's results (re-laying out the step after rejections or edits) and count the calls run."""
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


def _calls_after_hooks(messages: list[ChatMessage], seen: set[str], own: list[ToolCall]) -> list[ChatMessage]:
    """The assistant message whose calls run after before_tool hooks (the last message), ids made unique."""
    if not messages or messages[-1].role is not ChatRole.ASSISTANT or not messages[-1].tool_calls:
        return []
    last = messages[-1]
    calls = last.tool_calls
    if calls == own:
        return [last]
    fixed = repair_calls(calls, seen - {c.id for c in own if c.id})
    seen.update(c.id for c in fixed if c.id)
    if fixed is not calls and any(a is not b for a, b in zip(calls, fixed, strict=True)):
        last = with_calls(last, fixed)
        messages[-1] = last
    return [last]


@dataclass(slots=True)
class _Answered:
    """The model answered without calls to run: the step is over (``reason``: the exit, or None to go on)."""

    reason: str | None


@dataclass(slots=True)
class _Calls:
    """The model asked for tool calls: ``pending`` holds the assistant message whose ``calls`` run."""

    pending: list[ChatMessage]
    calls: list[ToolCall]


@dataclass(slots=True)
class _StepEnd:
    """How a step ended: the exit reason (None: the loop goes on) and whether a hook's ``stop_run`` ended it."""

    reason: str | None
    stopped: bool = False


def _offered(plan: RunPlan, run: RunState) -> tuple[list[Tool], tuple[str, ...]]:
    """The tools of this step and their names, when a Toolset is flattened again each step (it may have grown)."""
    tools = flatten_tools(plan.tools)
    run.offered = tools
    return tools, tuple(t.name for t in tools)


def _model_turn(
    plan: RunPlan, parts: RunParts, run: RunState, names: tuple[str, ...], enter: Position | None
) -> Generator[Effect, Any, _Answered | _Calls]:
    """The model call of a step (after the breakpoint check) and the before_tool hooks."""
    data = run.state.data
    cp = parts.checkpoints
    if cp is not None and enter is None and cp.breaks_at_model():
        yield Pause("chat_generator", [])
    messages: list[ChatMessage] = data["messages"]
    replies = checked_replies((yield CallModel(list(messages), names)), plan.model_name)
    if cp is not None:
        run.visits["chat_generator"] += 1
    replies, calls = take_replies(replies, run.state, run.seen)
    messages.extend(replies)
    if not calls or not plan.tools:
        data["step_count"] += 1
        return _Answered("text" if not plan.tools else reply_exit(replies))
    pending = replies
    if plan.hooks.before_tool:
        yield RunHooks("before_tool")
        pending = _calls_after_hooks(data["messages"], run.seen, calls)
        calls = pending[0].tool_calls if pending else []
    return _Calls(pending, calls)


def _tool_turn(
    plan: RunPlan, parts: RunParts, run: RunState, tools: list[Tool], turn: _Calls, enter: Position | None
) -> Generator[Effect, Any, list[ChatMessage]]:
    """The tool step of a step: breakpoint check, approvals, execution, results recorded."""
    cp, calls, state = parts.checkpoints, turn.calls, run.state
    if cp is not None:
        if enter is None and cp.breaks_at_tools(calls):
            cp.begin_step(state)
            yield Pause("tool_invoker", [])
        cp.begin_step(state)
    if parts.approvals is not None:
        run.step_calls = calls
    by_name = plan.static_by_name if plan.static_tools is not None else {t.name: t for t in tools}
    results = yield from tool_step(calls, by_name, state, plan.step_options, run.bound)
    if run.held:
        yield Pause("tool_invoker", [c.id or "" for c in run.held])
    if cp is not None:
        run.end_step(calls)
    _record_results(state.data["messages"], turn.pending, results, state.data["tool_call_counts"], run.applied)
    return results


def _one_step(plan: RunPlan, parts: RunParts, run: RunState) -> Generator[Effect, Any, _StepEnd]:
    """One step: before_llm hooks, the model call, and the tool calls it asked for.

    ``run.enter`` is None for a fresh step, or where a resumed run re-enters its first step ("chat_generator":
    the before_llm hooks already ran; "tool_invoker": the model answered and the before_tool hooks ran, the calls
    of the last message are pending); it is None again once the step began.
    """
    data = run.state.data
    hooks = plan.hooks
    enter, run.enter = run.enter, None
    if plan.static_tools is not None:
        tools, names = plan.static_tools, plan.static_names
        run.offered = tools
    else:
        tools, names = _offered(plan, run)
    if enter is None:
        data["stop_run"] = None
        data["continue_run"] = False
        if hooks.before_llm:
            yield RunHooks("before_llm")
            if data["stop_run"]:
                return _StepEnd(str(data["stop_run"]), True)
    if enter == "tool_invoker":
        last = data["messages"][-1]
        turn: _Answered | _Calls = _Calls([last], last.tool_calls)
    else:
        turn = yield from _model_turn(plan, parts, run, names, enter)
        if type(turn) is _Answered:
            return _StepEnd(turn.reason)
    assert type(turn) is _Calls
    results: list[ChatMessage] = []
    if turn.calls:
        results = yield from _tool_turn(plan, parts, run, tools, turn, enter)
    if hooks.after_tool:
        yield RunHooks("after_tool")
    data["step_count"] += 1
    reason = _tool_exit(results, plan.exit_tools) if plan.exit_tools else None
    if reason is None and data["stop_run"]:
        return _StepEnd(str(data["stop_run"]), True)
    return _StepEnd(reason)


def _run_hooks(plan: RunPlan, point: HookPoint) -> Generator[Effect, Any, bool]:
    """Yield the hooks of ``point`` when it has any; returns whether it had."""
    if not getattr(plan.hooks, point):
        return False
    yield RunHooks(point)
    return True


def agent_machine(plan: RunPlan, parts: RunParts, run: RunState) -> Generator[Effect, Any, None]:
    """Run the agent loop on ``run`` until an exit condition holds.

    A fresh run with chat or memory stores first loads them into its input (``LoadStores``). One step is one
    model call plus the tool calls it requested:

    1. ``before_run`` hooks run once (a ``stop_run`` there ends the run before any step). Each step
       starts with ``stop_run`` / ``continue_run`` reset.
    2. Flatten the tools (a dynamic Toolset may have grown); run the ``before_llm`` hooks (they may
       rewrite the messages; a ``stop_run`` reason ends the run here, without a model call); yield
       ``CallModel``.
    3. Add the replies' usage to ``token_usage``; give calls with a missing, empty or repeated id
       a unique one (the reply is rewritten so call and result agree); append the replies.
    4. A run with no tools ends after this one reply (reason ``"text"``). A reply without tool
       calls ends the run when it stopped for ``length`` / ``content_filter`` (that reason) or has
       non-empty text (``"text"``); an empty reply is not an answer: next step.
    5. Otherwise run the ``before_tool`` hooks (they may rewrite or remove the pending calls; the
       calls of the last message run), then the calls (``tool_step``: validation, then approval by
       the confirmation strategies, then execution), append one result per call (a rejected call and
       its error result go first as a pair of their own, the explanation of an edit follows as a user
       message, then the surviving calls with their results), count the calls run, run the
       ``after_tool`` hooks (they may rewrite results), and end the run when an exit tool ran
       without error (judged on names and error flags, not rewritten text) or a hook set ``stop_run``.
    6. When an exit condition holds, the ``on_exit`` hooks run; ``continue_run`` set there keeps the
       loop going. After ``max_agent_steps`` model calls the reason is ``"max_agent_steps"``.
    7. ``after_run`` hooks run on every exit condition (not when an effect raised, nor at a pause). A fresh run
       whose input is still empty after the stores and ``before_run`` hooks (no message, no system prompt) ends
       at once with reason ``"empty_input"``, without a model call (as Haystack's ``Agent.run([])``).
    8. ``Finish`` marks the durable record done and writes the chat / memory stores.

    The outcome is written into ``run.state`` (messages, counters, ``exit_reason``).
    """
    data = run.state.data
    hooks = plan.hooks
    if run.enter is not None:
        run.seen.update(c.id for m in data["messages"] for c in m.tool_calls if c.id)
    reason: str | None = None
    if run.enter is None and parts.stores is not None:
        yield LoadStores()
    if run.enter is None and (yield from _run_hooks(plan, "before_run")) and data["stop_run"]:
        reason = data["exit_reason"] = str(data["stop_run"])
    if reason is None and run.enter is None and not data["messages"]:
        reason = data["exit_reason"] = "empty_input"  # nothing to answer (no system prompt either): no model call
    while reason is None and (data["step_count"] < plan.max_agent_steps or run.enter is not None):
        end = yield from _one_step(plan, parts, run)
        reason = end.reason
        if reason is None:
            continue
        data["exit_reason"] = reason
        if end.stopped or not hooks.on_exit:
            break
        data["continue_run"] = False
        yield RunHooks("on_exit")
        if not data["continue_run"]:
            break
        data["continue_run"] = False
        data["exit_reason"] = reason = None
    if reason is None:
        data["exit_reason"] = "max_agent_steps"
        _LOG.warning("Agent reached maximum agent steps of %d, stopping.", plan.max_agent_steps)
    data["stop_run"] = None
    data["continue_run"] = False
    yield from _run_hooks(plan, "after_run")
    if (parts.checkpoints is not None and parts.checkpoints.durable) or parts.stores is not None:
        yield Finish()
