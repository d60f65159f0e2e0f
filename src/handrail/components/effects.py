"""The effects a run yields to its driver, and their results: data only.

A run (:meth:`Agent.start <handrail.components.agents.agent.Agent.start>`, or a ToolInvoker's tool step) never
does I/O itself. It yields one of the effects below and waits for its result; a driver
(:mod:`handrail.components.drivers`) executes the effect, usually through the run's context, which resolves the
names an effect holds (tool names, the hook point, the call ids) to the live objects of the run. Every effect and
every result holds only names, ids and JSON-able values (messages, decisions and chunks have their own JSON form),
so a driver may send them to another process or record them (:func:`to_json` / :func:`from_json`).

=================  ==================================================  ===============================
effect             asks the driver to                                  result
=================  ==================================================  ===============================
``CallModel``      call the chat generator on ``messages``,             ``list[ChatMessage]`` (replies)
                   offering the tools named in ``tools``
``RunTools``       run these tool calls (at most ``max_workers`` at     ``list[ToolOutcome]``, in order
                   once)
``AskApproval``    ask each call's confirmation strategy                ``list[ToolExecutionDecision]``
``LoadStores``     load the chat history and memories into the input    ``None``
``RunHooks``       run the hooks of ``point`` on the run's State        ``None``
``Persist``        make the run's record durable as it is now           ``None``
``Pause``          write the pause snapshot and stop the run            (raises the breakpoint exception)
``Finish``         mark the run's record done, write chat / memory      ``None``
                   stores
``Emit``           send ``chunk`` to the streaming callback             ``None``
=================  ==================================================  ===============================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.streaming import StreamingChunk

__all__ = [
    "AskApproval",
    "CallModel",
    "Effect",
    "Emit",
    "Finish",
    "LoadStores",
    "Pause",
    "Persist",
    "RunHooks",
    "RunTools",
    "ToolInvocation",
    "ToolOutcome",
    "from_json",
    "to_json",
]

HookPoint = Literal["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]
Position = Literal["chat_generator", "tool_invoker"]


@dataclass(slots=True)
class CallModel:
    """Ask the chat generator for a reply; answer with the list of reply messages."""

    messages: list[ChatMessage]
    """The model input (a copy: the generator may keep it)."""
    tools: tuple[str, ...]
    """The names of the tools offered (empty when the run has none)."""


@dataclass(slots=True)
class ToolInvocation:
    """One tool call to run: its id, the tool's name and the model's validated arguments."""

    call_id: str | None
    """The call's id (unique in its step)."""
    tool_name: str
    """The tool to run, by name."""
    arguments: dict[str, Any]
    """The model's arguments (JSON), after approval edits; State-injected values are added by the driver."""
    key: str
    """The idempotency key given to a ``ToolCallId`` parameter (the call id, or ``call_<position>``)."""


@dataclass(slots=True)
class RunTools:
    """Run these calls, concurrently (at most ``max_workers`` at once); answer with one ToolOutcome per call."""

    calls: list[ToolInvocation]
    max_workers: int


@dataclass(slots=True)
class ToolOutcome:
    """What one tool call did: its return value, or the error it raised."""

    call_id: str | None
    ok: bool
    """True when the tool returned."""
    value: Any = None
    """The tool's return value (when ``ok``)."""
    error: str | None = None
    """The error's type and message (when not ``ok``), known secret values masked."""
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    """The exception itself, when the tool ran in this process (kept for ``raise ... from``; never serialized)."""


@dataclass(slots=True)
class AskApproval:
    """Ask each call's confirmation strategy; answer with one ToolExecutionDecision per call, in order."""

    calls: list[ToolInvocation]


@dataclass(slots=True)
class LoadStores:
    """Put the chat store's history and the memories found into the run's input (a fresh run); answer with None."""


@dataclass(slots=True)
class RunHooks:
    """Run the run's hooks of ``point``, in order, on its State; answer with None."""

    point: HookPoint


@dataclass(slots=True)
class Persist:
    """Make the run's durable record hold its ledger as it is now; answer with None."""


@dataclass(slots=True)
class Pause:
    """Stop the run: write the snapshot at ``position`` and raise the breakpoint exception."""

    position: Position
    held: list[str]
    """The ids of the calls held for a decision (empty for a debugging breakpoint)."""


@dataclass(slots=True)
class Finish:
    """The run ended: mark its durable record done and write the chat / memory stores; answer with None."""


@dataclass(slots=True)
class Emit:
    """Send ``chunk`` to the run's streaming callback; answer with None."""

    chunk: StreamingChunk


Effect = CallModel | RunTools | AskApproval | RunHooks | LoadStores | Persist | Pause | Finish | Emit
"""Every effect a run can yield."""

_PLAIN: dict[str, type[Any]] = {
    "load_stores": LoadStores,
    "run_hooks": RunHooks,
    "persist": Persist,
    "pause": Pause,
    "finish": Finish,
}


def _invocations(items: list[ToolInvocation]) -> list[dict[str, Any]]:
    return [{"call_id": c.call_id, "tool_name": c.tool_name, "arguments": c.arguments, "key": c.key} for c in items]


def to_json(value: Effect | ToolOutcome | ChatMessage | ToolExecutionDecision | None) -> dict[str, Any] | None:
    """The JSON form of an effect or of one item of a result (a reply, a tool outcome, a decision).

    A tool's return value is written in the typed JSON form snapshots use; a tool's exception object is not
    written (its text is).
    """
    from handrail.core import _typed_json as typed_json  # the codec loads on first use: keeps `import handrail` fast

    match value:
        case None:
            return None
        case CallModel(messages=messages, tools=tools):
            return {"type": "call_model", "messages": [m.to_dict() for m in messages], "tools": list(tools)}
        case RunTools(calls=calls, max_workers=workers):
            return {"type": "run_tools", "calls": _invocations(calls), "max_workers": workers}
        case AskApproval(calls=calls):
            return {"type": "ask_approval", "calls": _invocations(calls)}
        case RunHooks(point=point):
            return {"type": "run_hooks", "point": point}
        case Pause(position=position, held=held):
            return {"type": "pause", "position": position, "held": list(held)}
        case Persist():
            return {"type": "persist"}
        case LoadStores():
            return {"type": "load_stores"}
        case Finish():
            return {"type": "finish"}
        case Emit(chunk=chunk):
            return {"type": "emit", "chunk": typed_json.encode_value(chunk, "chunk")}
    return _result_json(value)


def _result_json(value: object) -> dict[str, Any]:
    from handrail.core import _typed_json as typed_json

    match value:
        case ToolOutcome():
            value_json = typed_json.encode_value(value.value, "tool result") if value.ok else None
            return {"type": "tool_outcome", "call_id": value.call_id, "ok": value.ok, "value": value_json,
                    "error": value.error}  # fmt: skip
        case ChatMessage():
            return {"type": "message", **value.to_dict()}
        case ToolExecutionDecision():
            return {"type": "decision", **value.to_dict()}
    raise TypeError(f"to_json takes an effect or a result item, got {type(value).__name__}.")


def _tool_invocations(items: list[dict[str, Any]]) -> list[ToolInvocation]:
    return [ToolInvocation(i["call_id"], i["tool_name"], i["arguments"], i["key"]) for i in items]


def from_json(data: dict[str, Any] | None) -> Any:
    """The effect or result item that :func:`to_json` wrote.

    Raises:
        ValueError: ``data`` names no known type.
    """
    from handrail.core import _typed_json as typed_json

    if data is None:
        return None
    kind = data.get("type")
    rest = {k: v for k, v in data.items() if k != "type"}
    if kind == "call_model":
        return CallModel([ChatMessage.from_dict(m) for m in rest["messages"]], tuple(rest["tools"]))
    if kind == "run_tools":
        return RunTools(_tool_invocations(rest["calls"]), int(rest["max_workers"]))
    if kind == "ask_approval":
        return AskApproval(_tool_invocations(rest["calls"]))
    if kind == "emit":
        return Emit(typed_json.decode_value(rest["chunk"], "chunk"))
    if kind == "tool_outcome":
        value = typed_json.decode_value(rest["value"], "tool result") if rest["ok"] else None
        return ToolOutcome(rest["call_id"], bool(rest["ok"]), value, rest["error"])
    if kind == "message":
        return ChatMessage.from_dict(rest)
    if kind == "decision":
        return ToolExecutionDecision.from_dict(rest)
    if kind in _PLAIN:
        return _PLAIN[str(kind)](**rest)
    raise ValueError(f"from_json: unknown type {kind!r}.")
