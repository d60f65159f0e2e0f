"""The tool step: one batch of tool calls, written once as a sans-I/O generator.

``tool_step`` yields ``RunTools`` (and ``Emit`` when streaming) effects and receives the tools' outcomes; the
drivers run the tools. Both the public ToolInvoker and the Agent's step machine use it, so there is one
implementation of the rules: a call is answered by exactly one tool message, in call order; arguments are
parsed as JSON and validated against the tool's schema before anything runs; State-injected values and the
call's id are added as the tool declares; outputs merge into State in call order; results become text one way.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from handrail.components.effects import Emit, RunTools, ToolOutcome
from handrail.components.tools._arguments import clip, parse_arguments, repair_calls, writable_arguments
from handrail.components.tools._effects import Bound, Invocation, Outcome
from handrail.components.tools._results import convert_result, describe_exception, failure_message_text, merge_outputs
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import StreamingCallback, StreamingChunk
from handrail.errors import (
    RunError,
    StringConversionError,
    ToolInvocationError,
    ToolNotFoundException,
    ToolOutputMergeError,
)
from handrail.tools.tool import Tool

__all__ = ["Gate", "Held", "ToolStepOptions", "failure_text", "finish_call", "make_invocation", "parse_arguments",
           "repair_calls", "tool_step", "writable_arguments"]  # fmt: skip

StepEffect = RunTools | Emit


@dataclass(frozen=True, slots=True)
class Held:
    """A gate's answer for a call held for a decision: it does not run now, and the step stops after its batch."""

    call: ToolCall


Gate = Callable[[list[Invocation], State], Generator[Any, Any, list["Invocation | ChatMessage | Held"]]]


@dataclass(frozen=True, slots=True)
class ToolStepOptions:
    """How a tool step treats failures, results and streaming."""

    raise_on_failure: bool = False
    """Raise instead of returning an error tool result."""
    convert_result_to_json_string: bool = False
    """JSON-encode every result, strings included."""
    max_workers: int = 8
    """At most this many tools run at once."""
    streaming_callback: StreamingCallback | None = None
    """When set, one chunk per result and a final chunk are emitted."""
    passthrough: bool = False
    """Give the streaming callback to tools that declare a ``streaming_callback`` parameter."""
    gate: Gate | None = None
    """Runs before each batch executes: returns, per invocation, the (possibly modified) invocation to
    run, the tool message that answers it instead (e.g. a rejection), or :class:`Held` (the step then
    stops after this batch and leaves unanswered positions None). The Agent's approval step."""


def _reads_writes(tool: Tool, args: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    reads = {k for k, p in (tool.inputs_from_state or {}).items() if p not in args}
    writes = set(tool.outputs_to_state or ())
    if tool.roles.state_param is not None:
        reads.add("*")
        writes.add("*")
    return reads, writes


def _waves(ready: list[tuple[int, ToolCall, Tool, dict[str, Any]]]) -> list[list[int]]:
    """Group ready calls (by position in ``ready``) so a State reader runs after its writers."""
    if len(ready) == 1:
        return [[0]]
    rw = [_reads_writes(tool, args) for _, _, tool, args in ready]
    if not any(r or w for r, w in rw):
        return [list(range(len(ready)))]

    def feeds(j: int, i: int) -> bool:
        w, r = rw[j][1], rw[i][0]
        return bool(w & r or ("*" in w and r) or ("*" in r and w))

    level = [0] * len(ready)
    for _ in range(len(ready)):
        for i in range(len(ready)):
            for j in range(len(ready)):
                if j != i and feeds(j, i) and (not feeds(i, j) or j < i):
                    level[i] = max(level[i], level[j] + 1)
    top = min(max(level), len(ready) - 1)
    return [[i for i in range(len(ready)) if min(level[i], top) == n] for n in range(top + 1)]


def make_invocation(
    call: ToolCall, tool: Tool, args: dict[str, Any], state: State, opts: ToolStepOptions, key: str
) -> Invocation:
    """Build the invocation of ``call``: the model's ``args`` plus State-injected values.

    Args:
        call: The call.
        tool: Its tool.
        args: The model's (validated) arguments.
        state: Read for ``inputs_from_state``; given to a ``State`` parameter.
        opts: Gives the streaming callback for passthrough.
        key: The idempotency key given to a ``ToolCallId`` parameter.
    """
    roles = tool.roles
    if not (tool.inputs_from_state or roles.state_param or roles.call_id_param or opts.passthrough):
        return Invocation(call, tool, args, args, {}, key)
    injected: dict[str, Any] = {}
    for state_key, param in (tool.inputs_from_state or {}).items():
        if param not in args and state.has(state_key):
            injected[param] = state.get(state_key)
    kwargs = {**args, **injected}
    if roles.state_param is not None:
        kwargs[roles.state_param] = state
    if roles.call_id_param is not None:
        kwargs[roles.call_id_param] = key
    if opts.passthrough and roles.streaming_param and opts.streaming_callback is not None:
        kwargs.setdefault("streaming_callback", opts.streaming_callback)
    return Invocation(call, tool, kwargs, args, injected, key)


def _refuse(call: ToolCall, text: str, opts: ToolStepOptions) -> ChatMessage:
    if opts.raise_on_failure:
        raise ToolInvocationError(
            f"Tool call '{call.id}' to '{call.tool_name}' failed: {text}", call.tool_name, call.id
        )
    return ChatMessage.from_tool(text, call, error=True)


class RemoteToolError(Exception):
    """A tool's error that reached the run as text only (its outcome came as data, e.g. from another process)."""


def failure_text(inv: Invocation, exc: BaseException) -> str:
    """The error result text for a call whose tool raised ``exc``."""
    shown = clip(inv.call.arguments)
    described = str(exc) if type(exc) is RemoteToolError else describe_exception(exc)
    return f"Failed to invoke tool '{inv.tool.name}' with parameters {shown}. Error: {described}"


def outcome_of(outcome: ToolOutcome) -> Outcome:
    """A tool outcome (effect data) as ``(True, value)`` or ``(False, exception)``."""
    if outcome.ok:
        return True, outcome.value
    return False, outcome.exception or RemoteToolError(outcome.error or "unknown error")


def _checked(outcomes: object, invocations: list[Invocation]) -> list[ToolOutcome]:
    """The result of a ``RunTools`` effect, refused unless it is one ToolOutcome per call, in the calls' order.

    Raises:
        RunError: Not a list of ToolOutcome, another count, or an outcome naming another call (before any result
            is used).
    """
    if (
        type(outcomes) is list
        and len(outcomes) == 1 == len(invocations)
        and type(one := outcomes[0]) is ToolOutcome
        and one.call_id == invocations[0].call.id
    ):
        return outcomes  # the common case, checked cheaply
    if not isinstance(outcomes, list) or not all(isinstance(o, ToolOutcome) for o in outcomes):
        raise RunError(f"A RunTools effect is answered with a list of ToolOutcome, got {outcomes!r:.200}.")
    asked = [inv.call.id for inv in invocations]
    given = [o.call_id for o in outcomes]
    if given != asked:
        raise RunError(f"A RunTools effect for the calls {asked} was answered with outcomes for {given}.")
    return outcomes


def _run(invocations: list[Invocation], opts: ToolStepOptions, bound: Bound | None) -> RunTools:
    """The effect that runs ``invocations`` (kept in ``bound``, which the run's context reads)."""
    return RunTools((bound if bound is not None else Bound()).set(invocations), opts.max_workers)


def failed_call(inv: Invocation, text: str, opts: ToolStepOptions, cause: BaseException | None = None) -> ChatMessage:
    """The error result for a failed call (raises ToolInvocationError instead when ``opts.raise_on_failure``)."""
    call = inv.call
    if opts.raise_on_failure:
        raise ToolInvocationError(
            f"Tool call '{call.id}' to '{inv.tool.name}' failed: {text}", inv.tool.name, call.id
        ) from cause
    return ChatMessage.from_tool(text, call, error=True)


def finish_call(inv: Invocation, outcome: Outcome, state: State, opts: ToolStepOptions) -> ChatMessage:
    """Turn an outcome into the call's tool message, merging the tool's outputs into State first.

    Raises:
        ToolInvocationError: The tool raised, when ``opts.raise_on_failure``.
        ToolOutputMergeError, StringConversionError: When ``opts.raise_on_failure``.
    """
    return _finish(inv, outcome, state, opts)


def _finish(inv: Invocation, outcome: Outcome, state: State, opts: ToolStepOptions) -> ChatMessage:
    ok, value = outcome
    call, tool = inv.call, inv.tool
    if not ok:
        return failed_call(inv, failure_text(inv, value), opts, value)
    try:
        merge_outputs(tool, value, state)
        text = convert_result(tool, value, opts.convert_result_to_json_string)
    except (ToolOutputMergeError, StringConversionError) as exc:
        if opts.raise_on_failure:
            raise
        return ChatMessage.from_tool(failure_message_text(exc, call.id), call, error=True)
    return ChatMessage.from_tool(text, call)


Ready = tuple[int, ToolCall, Tool, dict[str, Any]]
"""A call that passed every check: (position, call, tool, parsed arguments)."""


def _prepare(
    calls: list[ToolCall], tools: Mapping[str, Tool], opts: ToolStepOptions
) -> tuple[list[ChatMessage | None], list[Ready]]:
    """Resolve, parse and validate each call; refused calls get their error result at once."""
    results: list[ChatMessage | None] = [None] * len(calls)
    ready: list[Ready] = []
    for position, call in enumerate(calls):
        tool = tools.get(call.tool_name)
        if tool is None:
            missing = ToolNotFoundException(call.tool_name, list(tools))
            if opts.raise_on_failure:
                raise missing
            results[position] = ChatMessage.from_tool(str(missing), call, error=True)
            continue
        args, problem = parse_arguments(call)
        if args is not None:
            violation = tool.arguments_error(args)
            if violation is not None:
                problem = f"Arguments for tool '{tool.name}' do not match its JSON Schema: {violation}"
        if problem is not None or args is None:
            results[position] = _refuse(call, problem or "invalid arguments", opts)
            continue
        ready.append((position, call, tool, args))
    return results, ready


def tool_step(
    calls: list[ToolCall], tools: Mapping[str, Tool], state: State, opts: ToolStepOptions,
    bound: Bound | None = None,
) -> Generator[StepEffect, Any, list[ChatMessage]]:  # fmt: skip
    """Run one step's tool calls and return one tool message per call, in call order.

    Algorithm, per call: resolve the tool (unknown → error result listing the available tools);
    parse the arguments; validate them against the tool's JSON Schema; then run the valid calls
    in waves (a State reader after its writers), merging outputs into State in call order;
    finally emit one chunk per result and a closing chunk when streaming.

    Args:
        calls: The calls, ids already unique.
        tools: Tools by name.
        state: The run's State (read for ``inputs_from_state``, written by ``outputs_to_state``).
        opts: Failure, conversion, concurrency and streaming options.
        bound: Receives the live invocations of each ``RunTools`` effect before it is yielded (the run's context
            runs them from there; a driver elsewhere rebuilds them from the effect's data).

    Returns:
        One tool-role ChatMessage per call, in call order.

    Raises:
        ToolNotFoundException: Unknown tool, when ``opts.raise_on_failure``.
        ToolInvocationError: Invalid arguments or a tool that raised, when ``opts.raise_on_failure``.
    """
    results, ready = _prepare(calls, tools, opts)
    for wave in _waves(ready) if ready else ():
        invocations = [
            make_invocation(
                ready[i][1], ready[i][2], ready[i][3], state, opts, ready[i][1].id or f"call_{ready[i][0] + 1}"
            )
            for i in wave
        ]
        if opts.gate is None:
            outcomes = _checked((yield _run(invocations, opts, bound)), invocations)
            for i, inv, outcome in zip(wave, invocations, outcomes, strict=True):
                results[ready[i][0]] = _finish(
                    inv, (True, outcome.value) if outcome.ok else outcome_of(outcome), state, opts
                )
            continue
        gated = yield from opts.gate(invocations, state)
        runnable = [g for g in gated if type(g) is Invocation]
        outcomes = _checked((yield _run(runnable, opts, bound)), runnable) if runnable else []
        done = iter(zip(runnable, outcomes, strict=True))
        for i, item in zip(wave, gated, strict=True):
            if type(item) is Invocation:
                inv, outcome = next(done)
                results[ready[i][0]] = _finish(inv, outcome_of(outcome), state, opts)
            elif type(item) is ChatMessage:
                results[ready[i][0]] = item
        if any(type(item) is Held for item in gated):
            return results  # type: ignore[return-value]  # held calls: the caller pauses the step
    messages: list[ChatMessage] = results  # type: ignore[assignment]  # every position is answered by now
    if opts.streaming_callback is not None:
        for index, message in enumerate(messages):
            result = message.tool_call_result
            assert result is not None
            yield Emit(
                StreamingChunk(
                    content="",
                    index=index,
                    tool_call_result=result,
                    start=True,
                    meta={"tool_result": result.result, "tool_call": result.origin},
                )
            )
        yield Emit(
            StreamingChunk(content="", finish_reason="tool_call_results", meta={"finish_reason": "tool_call_results"})
        )
    return messages
