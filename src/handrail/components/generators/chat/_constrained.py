"""The JSON Schema that constrains the embedded model's replies, and turning a reply into a message.

With tools, every reply of the embedded model is generated under a JSON Schema (compiled to a
grammar by the runtime) that allows exactly one of:

* a call of one of the tools: ``{"name": "<tool>", "arguments": {...}}`` with the arguments
  matching that tool's parameter schema (the shape Qwen's chat template itself asks for), or
* a final answer: ``{"final_answer": "<non-empty text>"}``.

Small models then produce syntactically valid calls every time. This module builds that schema,
parses a finished reply (tolerating replies that break it, e.g. when cut by ``max_tokens``),
decodes a final answer's text incrementally for streaming, and detects a call that merely repeats
the previous one.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.tools.tool import Tool

__all__ = [
    "FINAL_ANSWER_KEY",
    "FinalAnswerStream",
    "ParsedReply",
    "arguments_schema",
    "parse_reply",
    "repeats_previous_call",
    "reply_schema",
]

FINAL_ANSWER_KEY = "final_answer"
"""The key of the final-answer branch: ``{"final_answer": "..."}``."""

_FINAL_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {FINAL_ANSWER_KEY: {"type": "string", "minLength": 1}},
    "required": [FINAL_ANSWER_KEY],
    "additionalProperties": False,
}
_DEF_KEYS = ("$defs", "definitions")


def _close_objects(node: Any) -> Any:
    """Return ``node`` with ``additionalProperties: false`` on every object schema that lists properties."""
    if isinstance(node, list):
        return [_close_objects(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _close_objects(value) for key, value in node.items()}
    if isinstance(out.get("properties"), dict) and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def _rewrite_refs(node: Any, rewrite: dict[str, str], base: str) -> Any:
    """Point every local ``$ref`` of a tool's schema at where that schema now lives in the reply schema."""
    if isinstance(node, list):
        return [_rewrite_refs(item, rewrite, base) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _rewrite_refs(value, rewrite, base) for key, value in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        pointer = ref[1:].lstrip("/")
        head, _, rest = pointer.partition("/")
        if head in _DEF_KEYS and rest.split("/", 1)[0] in rewrite:
            name, _, tail = rest.partition("/")
            out["$ref"] = f"#/$defs/{rewrite[name]}" + (f"/{tail}" if tail else "")
        else:
            out["$ref"] = f"#{base}" + (f"/{pointer}" if pointer else "")
    return out


def arguments_schema(parameters: dict[str, Any]) -> dict[str, Any]:
    """Return the schema the model's arguments are generated under for a tool's ``parameters``.

    It is the tool's schema with ``additionalProperties: false`` added to object schemas that list
    properties and do not say otherwise (every generated call then still matches the tool's
    schema, and small models cannot invent extra keys). ``$defs``/``definitions`` stay in place;
    :func:`reply_schema` hoists them.

    Args:
        parameters: The tool's JSON Schema; not modified.

    Returns:
        A new schema dict.
    """
    schema = _close_objects(copy.deepcopy(parameters))
    assert isinstance(schema, dict)
    return schema


def reply_schema(tools: Sequence[Tool], *, allow_calls: bool = True) -> dict[str, Any]:
    """Build the JSON Schema of the replies the model may give.

    Args:
        tools: The tools the model may call; their names must be unique.
        allow_calls: False allows only the final-answer branch (used to stop a repeated call).

    Returns:
        ``{"anyOf": [call of tool 1, …, final answer]}`` where a call is
        ``{"name": <const>, "arguments": <that tool's schema>}``; just the final-answer object
        when there are no tools or calls are not allowed. A tool's ``$defs``/``definitions`` are
        moved to the root ``$defs`` (prefixed with the tool's position) and its local ``$ref``
        pointers rewritten, so references resolve in the combined document.
    """
    if not allow_calls or not tools:
        return copy.deepcopy(_FINAL_ANSWER_SCHEMA)
    branches: list[dict[str, Any]] = []
    root_defs: dict[str, Any] = {}
    for index, tool in enumerate(tools):
        arguments = arguments_schema(tool.parameters)
        defs: dict[str, Any] = {}
        for key in _DEF_KEYS:
            found = arguments.pop(key, None)
            if isinstance(found, dict):
                defs.update(found)
        rewrite = {name: f"t{index}_{name}" for name in defs}
        base = f"/anyOf/{index}/properties/arguments"
        arguments = _rewrite_refs(arguments, rewrite, base)
        for name, definition in defs.items():
            root_defs[rewrite[name]] = _rewrite_refs(definition, rewrite, base)
        arguments.pop("$schema", None)
        branches.append(
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": arguments},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": [*branches, copy.deepcopy(_FINAL_ANSWER_SCHEMA)]}
    if root_defs:
        schema["$defs"] = root_defs
    return schema


@dataclass(frozen=True, slots=True)
class ParsedReply:
    """What a constrained reply turned out to be."""

    kind: Literal["tool_call", "final_answer", "invalid"]
    """``tool_call``, ``final_answer``, or ``invalid`` when neither can be made of it."""
    text: str
    """The final answer's text; for other kinds the raw reply."""
    tool_name: str | None = None
    """The called tool's name (``tool_call`` only)."""
    arguments: dict[str, Any] | str | None = None
    """The call's arguments: a dict, or the raw text when they are not a JSON object (``tool_call`` only)."""


_NAME_RE = re.compile(r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ARGUMENTS_RE = re.compile(r'\s*,\s*"arguments"\s*:\s*')


def _salvage_call(raw: str) -> ParsedReply | None:
    """Recover the tool name (and the raw argument text) from a call that is not valid JSON."""
    match = _NAME_RE.match(raw)
    if match is None:
        return None
    try:
        name = json.loads(f'"{match.group(1)}"')
    except ValueError:
        return None
    rest = raw[match.end() :]
    args = _ARGUMENTS_RE.match(rest)
    arguments = rest[args.end() :].rstrip() if args else rest.strip()
    if args and arguments.endswith("}}"):
        arguments = arguments[:-1]
    return ParsedReply(kind="tool_call", text=raw, tool_name=name, arguments=arguments)


def parse_reply(raw: str) -> ParsedReply:
    """Parse a finished constrained reply.

    Args:
        raw: The reply text exactly as generated.

    Returns:
        A ``final_answer`` for ``{"final_answer": str}``; a ``tool_call`` for
        ``{"name": str, "arguments": ...}`` (arguments kept as raw JSON text when they are not
        an object, ``{}`` when absent), also when the JSON is broken but the tool name can be
        read (the arguments are then the raw remaining text, which the tool step reports as
        invalid); otherwise ``invalid``.
    """
    try:
        value = json.loads(raw)
    except ValueError:
        return _salvage_call(raw) or ParsedReply(kind="invalid", text=raw)
    if isinstance(value, dict):
        answer = value.get(FINAL_ANSWER_KEY)
        if isinstance(answer, str) and "name" not in value:
            return ParsedReply(kind="final_answer", text=answer)
        name = value.get("name")
        if isinstance(name, str) and name:
            arguments = value.get("arguments", {})
            if not isinstance(arguments, dict):
                arguments = json.dumps(arguments, ensure_ascii=False)
            return ParsedReply(kind="tool_call", text=raw, tool_name=name, arguments=arguments)
    return ParsedReply(kind="invalid", text=raw)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSWER_START = re.compile(r'\s*\{\s*"final_answer"\s*:\s*"')


class FinalAnswerStream:
    r"""Decode the text of ``{"final_answer": "..."}`` while the reply is still being generated.

    Feed the raw reply fragments in order; each call returns the answer text decoded since the
    previous call (JSON escapes resolved; an escape split across fragments waits for its end).
    Nothing is returned for a reply that is not a final answer.

    Examples:
        >>> s = FinalAnswerStream()
        >>> [s.feed(f) for f in ['{"final_', 'answer": "caf', '\\u00e9 \\', 'n!"}']]
        ['', 'caf', 'é ', '\n!']
        >>> s.text
        'café \n!'
    """

    def __init__(self) -> None:
        self._raw = ""
        self._pos: int | None = None
        self._closed = False
        self.text = ""
        """The answer text decoded so far."""

    @property
    def started(self) -> bool:
        """True once the reply is known to be a final answer."""
        return self._pos is not None

    def feed(self, fragment: str) -> str:
        """Take the next raw fragment; return the newly decoded answer text (possibly ``""``)."""
        self._raw += fragment
        if self._pos is None:
            match = _ANSWER_START.match(self._raw)
            if match is None:
                return ""
            self._pos = match.end()
        if self._closed:
            return ""
        decoded, self._pos, self._closed = _decode_string_prefix(self._raw, self._pos)
        self.text += decoded
        return decoded


def _decode_escape(raw: str, i: int) -> tuple[str, int] | None:
    """Decode the escape that starts at ``raw[i]`` (a backslash); None while it is incomplete."""
    if i + 1 >= len(raw):
        return None
    kind = raw[i + 1]
    if kind != "u":
        return _ESCAPES.get(kind, kind), i + 2
    if i + 6 > len(raw):
        return None
    try:
        code = int(raw[i + 2 : i + 6], 16)
    except ValueError:
        return raw[i : i + 6], i + 6
    if 0xD800 <= code < 0xDC00:  # a high surrogate: combine it with the low one that follows
        if i + 12 > len(raw):
            return None
        if raw[i + 6 : i + 8] == "\\u":
            try:
                low = int(raw[i + 8 : i + 12], 16)
            except ValueError:
                low = -1
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 12
    return chr(code), i + 6


def _decode_string_prefix(raw: str, start: int) -> tuple[str, int, bool]:
    """Decode JSON string content from ``start``; return (text, next position, closed)."""
    out: list[str] = []
    i = start
    while i < len(raw):
        char = raw[i]
        if char == '"':
            return "".join(out), i + 1, True
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escaped = _decode_escape(raw, i)
        if escaped is None:
            break
        out.append(escaped[0])
        i = escaped[1]
    return "".join(out), i, False


def repeats_previous_call(messages: Sequence[ChatMessage], tool_name: str, arguments: dict[str, Any] | str) -> bool:
    """Tell whether a proposed call equals the previous call and that call's result is already present.

    Args:
        messages: The conversation sent to the model.
        tool_name: The proposed call's tool.
        arguments: The proposed call's arguments.

    Returns:
        True when the last assistant message with tool calls has a call with the same tool name and
        arguments, and a tool message after it holds a result for that call.
    """
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if not (message.is_from(ChatRole.ASSISTANT) and message.tool_calls):
            continue
        for call in message.tool_calls:
            if call.tool_name == tool_name and call.arguments == arguments:
                return _has_result(messages[position + 1 :], call)
        return False
    return False


def _has_result(later: Sequence[ChatMessage], call: ToolCall) -> bool:
    for message in later:
        for result in message.tool_call_results:
            origin = result.origin
            if (call.id is not None and origin.id == call.id) or (
                origin.tool_name == call.tool_name and origin.arguments == call.arguments
            ):
                return True
    return False
