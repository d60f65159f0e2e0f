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

__all__ = ["check_image_data", "check_message_data", "check_part_data", "check_reasoning_data", "check_result_data",
           "check_text_data", "check_tool_call_data", "current_layout", "render_path"]  # fmt: skip

Path = tuple[str | int, ...]

_ROLES = ("user", "system", "assistant", "tool")
_MESSAGE_KEYS = ("role", "content", "meta", "name")
_PART_KEYS = ("text", "tool_call", "tool_call_result", "image", "reasoning")
_RESULT_PART_KEYS = ("text", "image")
_IMAGE_KEYS = ("base64_image", "mime_type", "detail", "meta", "validation")
_REASONING_KEYS = ("reasoning_text", "extra")
_OLD_LAYOUT = {"_role": "role", "_content": "content", "_name": "name", "_meta": "meta"}
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
        self.typed(data, "result", path, (str, list), "a str or a list of text and image parts")
        if isinstance(data["result"], list):  # Haystack 2.23's content parts: [{"text": ...}, {"image": {...}}]
            for i, part in enumerate(data["result"]):
                self.part(part, (*path, "result", i), kinds=_RESULT_PART_KEYS)
        if data["error"] not in (True, False):  # 0 and 1 too: from_dict coerces them
            raise self.fail(
                (*path, "error"), f"must be true or false, got {_kind(data['error'])} {data['error']!r:.80}."
            )
        self.tool_call(data["origin"], (*path, "origin"))

    def image(self, data: Any, path: Path) -> None:
        self.keys(data, path, _IMAGE_KEYS, ("base64_image",))
        self.typed(data, "base64_image", path, (str,), "a str")
        self.typed(data, "mime_type", path, (str, type(None)), "a str or null")
        self.typed(data, "detail", path, (str, type(None)), "'auto', 'high', 'low' or null")
        self.typed(data, "meta", path, (dict, type(None)), "a mapping or null")
        self.typed(data, "validation", path, (bool,), "true or false")

    def reasoning(self, data: Any, path: Path) -> None:
        self.keys(data, path, _REASONING_KEYS, ("reasoning_text",))
        self.typed(data, "reasoning_text", path, (str,), "a str")
        self.typed(data, "extra", path, (dict, type(None)), "a mapping or null")

    def part(self, data: Any, path: Path, only: str | None = None, kinds: tuple[str, ...] = _PART_KEYS) -> None:
        if not isinstance(data, dict):
            raise self.fail(path, f"must be a mapping, got {_kind(data)} {data!r:.80}.")
        expected = (only,) if only else kinds
        found = [k for k in expected if k in data]
        if len(found) != 1:
            got = sorted(map(str, data))
            raise self.fail(path, f"is an unknown content part: it must hold one of {list(expected)}, got {got}.")
        kind = found[0]
        self.keys(data, path, (kind,), ())
        if kind == "text":
            self.typed(data, "text", path, (str,), "a str")
        elif kind == "tool_call":
            self.tool_call(data["tool_call"], (*path, "tool_call"))
        elif kind == "image":
            self.image(data["image"], (*path, "image"))
        elif kind == "reasoning":
            self.reasoning(data["reasoning"], (*path, "reasoning"))
        else:
            self.result(data["tool_call_result"], (*path, "tool_call_result"))

    def message(self, data: Any) -> None:
        if isinstance(data, dict) and not ("role" in data and "content" in data):
            phrase = (  # Haystack's wording, for a user who searches for it
                "The `role` field is required in the message dictionary"
                if "role" not in data
                else "Missing 'content' or '_content' in serialized ChatMessage"
            )
            raise self.fail((), f"needs 'role' and 'content' keys ({phrase}; roles: {list(_ROLES)}): {data!r:.200}")
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


def current_layout(data: Any) -> Any:
    """A message dict in today's keys: Haystack 2.9-2.11's ``_role``/``_content``/``_name``/``_meta`` renamed.

    A dict with ``content`` (or anything else) is returned as it is; so is one mixing both layouts, which
    :func:`check_message_data` then refuses, naming the unknown key.
    """
    if not isinstance(data, dict) or "content" in data or "_content" not in data:
        return data
    if any(k in data for k in _MESSAGE_KEYS):
        return data
    return {_OLD_LAYOUT.get(k, k): v for k, v in data.items()}


def check_part_data(data: Any, index: int, only: str | None = None) -> None:
    """Refuse a content part (``content[index]`` of a message) of the wrong shape (not of kind ``only``, if given).

    Raises:
        SerializationError: Naming ``content[index]`` and the field inside it.
    """
    _Checker("ChatMessage").part(data, ("content", index), only)


def check_text_data(data: Any) -> None:
    """Refuse a text part's dict that is not ``{"text": <str>}``.

    Raises:
        SerializationError: Naming the problem.
    """
    _Checker("TextContent").part(data, (), "text")


def check_image_data(data: Any) -> None:
    """Refuse an image part's dict of the wrong shape (an unknown key, ``base64_image`` not a str, ...).

    Raises:
        SerializationError: Naming the field.
    """
    _Checker("ImageContent").image(data, ())


def check_reasoning_data(data: Any) -> None:
    """Refuse a reasoning part's dict of the wrong shape.

    Raises:
        SerializationError: Naming the field.
    """
    _Checker("ReasoningContent").reasoning(data, ())


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
