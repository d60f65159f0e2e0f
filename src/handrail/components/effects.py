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


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What one tool call did: its return value, or the error it raised (frozen: an observer cannot change it)."""

    call_id: str | None
    ok: bool
    """True when the tool returned."""
    value: Any = None
    """The tool's return value (when ``ok``)."""
    error: str | None = None
    """The error's type and message (when not ``ok``), known secret values masked."""
    exception: BaseException | None = field(default=None, compare=False, repr=False)
    """The exception itself, when the tool ran in this process (kept for ``raise ... from``; never serialized)."""

    def __post_init__(self) -> None:
        if type(self.ok) is not bool or (self.ok and self.error is not None):
            raise ValueError(f"A ToolOutcome is ok=True with no error, or ok=False with one; got ok={self.ok!r}, "
                             f"error={self.error!r:.100}.")  # fmt: skip


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

_PLAIN: dict[str, type[Any]] = {"load_stores": LoadStores, "persist": Persist, "finish": Finish}


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


_POSITIONS = ("chat_generator", "tool_invoker")
_POINTS = ("before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run")


def _get(data: dict[str, Any], name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if name not in data:
        raise ValueError(f"from_json: {where} has no {name!r}.")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"from_json: {where}.{name} must be {_kind_name(kind)}, got {type(value).__name__}.")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join("null" if k is type(None) else k.__name__ for k in kinds)


def _strings(data: dict[str, Any], name: str, where: str) -> list[str]:
    values: list[Any] = _get(data, name, list, where)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"from_json: {where}.{name} must be a list of strings.")
    return [str(v) for v in values]


def _tool_invocations(data: dict[str, Any], where: str) -> list[ToolInvocation]:
    out = []
    for n, item in enumerate(_get(data, "calls", list, where)):
        at = f"{where}.calls[{n}]"
        if not isinstance(item, dict):
            raise ValueError(f"from_json: {at} must be an object.")
        out.append(ToolInvocation(_get(item, "call_id", (str, type(None)), at), _get(item, "tool_name", str, at),
                                  _get(item, "arguments", dict, at), _get(item, "key", str, at)))  # fmt: skip
    return out


def _one_of(value: Any, allowed: tuple[str, ...], where: str) -> Any:
    if value not in allowed:
        raise ValueError(f"from_json: {where} must be one of {list(allowed)}, got {value!r:.80}.")
    return value


def _effect_from_json(kind: str, data: dict[str, Any]) -> Any:
    from handrail.core import _typed_json as typed_json

    if kind == "call_model":
        messages = [ChatMessage.from_dict(m) for m in _get(data, "messages", list, kind)]
        return CallModel(messages, tuple(_strings(data, "tools", kind)))
    if kind == "run_tools":
        workers = _get(data, "max_workers", int, kind)
        if workers < 1:
            raise ValueError(f"from_json: run_tools.max_workers must be at least 1, got {workers}.")
        return RunTools(_tool_invocations(data, kind), workers)
    if kind == "ask_approval":
        return AskApproval(_tool_invocations(data, kind))
    if kind == "run_hooks":
        return RunHooks(_one_of(_get(data, "point", str, kind), _POINTS, "run_hooks.point"))
    if kind == "pause":
        position = _one_of(_get(data, "position", str, kind), _POSITIONS, "pause.position")
        return Pause(position, _strings(data, "held", kind))
    if kind == "emit":
        chunk = typed_json.decode_value(data.get("chunk"), "chunk")
        if not isinstance(chunk, StreamingChunk):
            raise ValueError(f"from_json: emit.chunk must be a StreamingChunk, got {type(chunk).__name__}.")
        return Emit(chunk)
    return _PLAIN[kind]()


def from_json(data: dict[str, Any] | None) -> Any:
    """The effect or result item that :func:`to_json` wrote.

    Raises:
        ValueError: ``data`` is not the JSON form of an effect or result item: an unknown type, a missing field or
            one of the wrong type or value (named).
    """
    from handrail.core import _typed_json as typed_json

    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"from_json takes an object (a dict), got {type(data).__name__}.")
    kind = data.get("type")
    rest = {k: v for k, v in data.items() if k != "type"}
    try:
        if kind == "tool_outcome":
            ok = _get(rest, "ok", bool, kind)
            value = typed_json.decode_value(rest.get("value"), "tool result") if ok else None
            error = _get(rest, "error", (str, type(None)), kind)
            return ToolOutcome(_get(rest, "call_id", (str, type(None)), kind), ok, value, error)
        if kind == "message":
            return ChatMessage.from_dict(rest)
        if kind == "decision":
            return ToolExecutionDecision.from_dict(rest)
        if kind in _KINDS:
            return _effect_from_json(str(kind), rest)
    except ValueError:
        raise
    except (KeyError, TypeError, AttributeError) as exc:  # a message's or a decision's own shape
        raise ValueError(f"from_json: a {kind} that is not valid: {exc}") from exc
    raise ValueError(f"from_json: unknown type {kind!r:.80}.")


_KINDS = ("call_model", "run_tools", "ask_approval", "run_hooks", "pause", "emit", "load_stores", "persist", "finish")
