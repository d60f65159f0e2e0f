"""The shapes ``ChatMessage.from_dict`` and its parts' ``from_dict`` accept, checked before anything is built.

Message dicts come from files (agent files' scripted replies, snapshots, store rows): a value of the wrong type,
or a key no message has, must be refused here, naming the field by its path (``content[0].tool_call.id``, kept
as keys and indexes in :attr:`SerializationError.path` so an agent file's error can give its line), not turned
into a message that fails later (a text part whose text is a list), into a bare ``TypeError``, or silently
dropped. The keys are those ``to_dict`` writes, as every handrail version wrote them (the snapshot schema
refuses the same unknown keys); Haystack's ``ToolCall.from_dict`` (``ToolCall(**data)``) refuses unknown keys too.
"""

from __future__ import annotations

from typing import Any

from handrail.errors import SerializationError

__all__ = ["check_message_data", "check_part_data", "check_result_data", "check_tool_call_data", "render_path"]

Path = tuple[str | int, ...]

_ROLES = ("user", "system", "assistant", "tool")
_MESSAGE_KEYS = ("role", "content", "meta", "name")
_PART_KEYS = ("text", "tool_call", "tool_call_result")
_CALL_KEYS = ("tool_name", "arguments", "id", "extra")
_RESULT_KEYS = ("result", "origin", "error")


def render_path(path: Path) -> str:
    """A path as messages write it: ``content[0].tool_call.id`` (``""`` for the root)."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _kind(value: Any) -> str:
    return type(value).__name__


class _Checker:
    """Raises for one object (``ChatMessage``, ``ToolCall``, ``ToolCallResult``) at a path inside it."""

    def __init__(self, owner: str) -> None:
        self.owner = owner

    def fail(self, path: Path, problem: str) -> SerializationError:
        where = f"{self.owner} '{render_path(path)}'" if path else f"{self.owner} data"
        return SerializationError(f"{where} {problem}", path=path)

    def keys(self, data: Any, path: Path, known: tuple[str, ...], required: tuple[str, ...]) -> None:
        if not isinstance(data, dict):
            raise self.fail(path, f"must be a mapping, got {_kind(data)} {data!r:.80}.")
        unknown = [k for k in data if k not in known]
        if unknown:
            at = (*path, unknown[0]) if isinstance(unknown[0], str) else path
            raise self.fail(
                at, f"is not a known key (unknown: {sorted(map(str, unknown))}); the keys are {list(known)}."
            )
        missing = [k for k in required if k not in data]
        if missing:
            raise self.fail(path, f"is missing the keys {missing} (it needs {list(required)}).")

    def typed(self, data: dict[str, Any], key: str, path: Path, kinds: tuple[type, ...], what: str) -> None:
        value = data.get(key)
        if key in data and not isinstance(value, kinds):
            raise self.fail((*path, key), f"must be {what}, got {_kind(value)} {value!r:.80}.")

    def tool_call(self, data: Any, path: Path) -> None:
        self.keys(data, path, _CALL_KEYS, ("tool_name", "arguments"))
        self.typed(data, "tool_name", path, (str,), "a str")
        self.typed(data, "arguments", path, (dict, str), "a mapping (or the model's raw text)")
        self.typed(data, "id", path, (str, type(None)), "a str or None")
        self.typed(data, "extra", path, (dict, type(None)), "a mapping or null")

    def result(self, data: Any, path: Path) -> None:
        self.keys(data, path, _RESULT_KEYS, _RESULT_KEYS)
        self.typed(data, "result", path, (str,), "a str")
        if data["error"] not in (True, False):  # 0 and 1 too: from_dict coerces them
            raise self.fail(
                (*path, "error"), f"must be true or false, got {_kind(data['error'])} {data['error']!r:.80}."
            )
        self.tool_call(data["origin"], (*path, "origin"))

    def part(self, data: Any, path: Path) -> None:
        if not isinstance(data, dict):
            raise self.fail(path, f"must be a mapping, got {_kind(data)} {data!r:.80}.")
        kinds = [k for k in _PART_KEYS if k in data]
        if len(kinds) != 1:
            got = sorted(map(str, data))
            raise self.fail(path, f"is an unknown content part: it must hold one of {list(_PART_KEYS)}, got {got}.")
        self.keys(data, path, (kinds[0],), ())
        if kinds[0] == "text":
            self.typed(data, "text", path, (str,), "a str")
        elif kinds[0] == "tool_call":
            self.tool_call(data["tool_call"], (*path, "tool_call"))
        else:
            self.result(data["tool_call_result"], (*path, "tool_call_result"))

    def message(self, data: Any) -> None:
        if isinstance(data, dict) and not ("role" in data and "content" in data):
            raise self.fail((), f"needs 'role' and 'content' keys: {data!r:.200}")
        self.keys(data, (), _MESSAGE_KEYS, ("role", "content"))
        role = data["role"]
        if not isinstance(role, str):
            raise self.fail(("role",), f"must be a str, got {_kind(role)} {role!r:.80}.")
        if role not in _ROLES:
            raise self.fail(("role",), f"is {role!r:.80}: Unknown chat role; expected one of {list(_ROLES)}.")
        content = data["content"]
        if not isinstance(content, str | list):
            raise self.fail(("content",), f"must be a str or a list of parts, got {_kind(content)} {content!r:.80}.")
        self.typed(data, "name", (), (str, type(None)), "a str or null")
        self.typed(data, "meta", (), (dict, type(None)), "a dict or null")
        if isinstance(content, list):
            for i, part in enumerate(content):
                self.part(part, ("content", i))


def check_message_data(data: Any) -> None:
    """Refuse a message dict of the wrong shape: a field of the wrong type or an unknown key, at any depth.

    Raises:
        SerializationError: Naming the field (``ChatMessage content[0].tool_call.id must be a str or None``),
            with its :attr:`~handrail.errors.SerializationError.path`.
    """
    _Checker("ChatMessage").message(data)


def check_part_data(data: Any, index: int) -> None:
    """Refuse a content part (``content[index]`` of a message) of the wrong shape.

    Raises:
        SerializationError: Naming ``content[index]`` and the field inside it.
    """
    _Checker("ChatMessage").part(data, ("content", index))


def check_tool_call_data(data: Any) -> None:
    """Refuse a tool call dict of the wrong shape (an unknown key, ``id`` not a str or None, ...).

    Raises:
        SerializationError: Naming the field.
    """
    _Checker("ToolCall").tool_call(data, ())


def check_result_data(data: Any) -> None:
    """Refuse a tool call result dict of the wrong shape (its ``origin`` included).

    Raises:
        SerializationError: Naming the field.
    """
    _Checker("ToolCallResult").result(data, ())
