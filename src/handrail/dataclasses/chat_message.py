"""Chat messages and their content parts.

The shapes follow Haystack's ``ChatMessage`` family: a message has a role, a list of
content parts (text, images, reasoning, tool calls, tool call results), an optional name and a ``meta``
dict. A tool call result holds a ``str`` or, as in Haystack 2.23, a list of text and image parts
(:data:`ToolCallResultContentT`); :func:`result_text` reads its text. ``to_dict`` / ``from_dict`` round-trip
losslessly (non-ASCII included) in Haystack 2.19's layout (2.23's for a result of parts); ``from_dict`` also reads
the layout of Haystack before 2.12 (``_role``, ``_content``, ``_name``, ``_meta``).
``to_openai_dict_format`` / ``from_openai_dict_format`` convert to and from OpenAI's Chat API dicts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from handrail.dataclasses import _message_shapes as shapes
from handrail.dataclasses.image_content import ImageContent
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError

__all__ = ["MAX_CALL_ID_CHARS", "ChatMessage", "ChatRole", "ImageContent", "ReasoningContent", "TextContent",
           "ToolCall", "ToolCallResult", "ToolCallResultContentT", "call_id_from", "call_id_problem",
           "image_placeholder", "result_text"]  # fmt: skip

MAX_CALL_ID_CHARS = 256
"""The longest call id kept as given (provider ids are 20-60 characters); a longer one is replaced."""


class ChatRole(StrEnum):
    """The author of a message: ``"user"``, ``"system"``, ``"assistant"`` or ``"tool"``."""

    USER = "user"
    SYSTEM = "system"
    ASSISTANT = "assistant"
    TOOL = "tool"

    @staticmethod
    def from_str(value: str) -> ChatRole:
        """Return the role named ``value``.

        Raises:
            ConfigurationError: For a name that is not one of the four roles.
        """
        try:
            return ChatRole(value)
        except ValueError:
            raise ConfigurationError(
                f"Unknown chat role {value!r}; expected one of {[r.value for r in ChatRole]}."
            ) from None


@dataclass(slots=True)
class TextContent:
    """A text part of a message."""

    text: str
    """The text, as written."""

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"text": text}``."""
        return {"text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TextContent:
        """Rebuild a TextContent from ``{"text": ...}``.

        Raises:
            SerializationError: When ``data`` is not ``{"text": <str>}`` (naming the problem).
        """
        shapes.check_text_data(data)
        return cls(text=data["text"])


@dataclass(slots=True)
class ReasoningContent:
    """The reasoning a model showed before its answer (an assistant message's part).

    Generators do not send it back to the model (OpenAI's Chat API has no place for it).
    """

    reasoning_text: str
    """The reasoning, as the model wrote it."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Provider-specific data (a signature, ...), carried along unchanged; keep it JSON data."""

    def __post_init__(self) -> None:
        if not isinstance(self.reasoning_text, str):
            raise ConfigurationTypeError(
                f"ReasoningContent reasoning_text must be a str, got {type(self.reasoning_text).__name__}."
            )

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"reasoning_text", "extra"}``."""
        return {"reasoning_text": self.reasoning_text, "extra": self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReasoningContent:
        """Rebuild a ReasoningContent from :meth:`to_dict` output (``extra`` may be left out).

        Raises:
            SerializationError: When a key is missing or unknown, or a field has the wrong type (naming it).
        """
        shapes.check_reasoning_data(data)
        return cls(reasoning_text=data["reasoning_text"], extra=dict(data.get("extra") or {}))


def call_id_problem(call_id: str, *, ascii_only: bool = True) -> str | None:
    r"""Why a person could not read ``call_id`` and type it back (``--call ID``), or None when they can.

    An id is readable when it is not empty, has at most :data:`MAX_CALL_ID_CHARS` characters, no whitespace
    around it, and only printable characters (``str.isprintable``: no control character such as a newline, ESC,
    DEL or a C1 control, no format character such as a bidirectional control, no separator but the space).
    Shown as it is, such an id is exactly what ``handrail approvals approve --call`` takes.

    With ``ascii_only`` (the rule for a model's ids, which the Agent repairs: :func:`call_id_from`) the id must
    also be ASCII, as every provider's ids are: outside ASCII two different ids can print alike (a variation
    selector, a combining mark, a Hangul filler, a braille blank). A :class:`ToolCall` built in Python, or read
    from a snapshot, is checked without it, so such ids written before still load.

    Examples:
        >>> [call_id_problem(v) is None for v in ("call_1", "c1\\x1b[31m", "c1\x1b[31m", " c1", "", "c1\ufe0f")]
        [True, True, False, False, False, False]
        >>> call_id_problem("c1\ufe0f", ascii_only=False) is None
        True
    """
    if not call_id:
        return "it is empty"
    if len(call_id) > MAX_CALL_ID_CHARS:
        return f"it has {len(call_id):,} characters (at most {MAX_CALL_ID_CHARS} are kept)"
    if not call_id.isprintable():
        bad = next(c for c in call_id if not c.isprintable())
        return f"it holds the unprintable character U+{ord(bad):04X}"
    if ascii_only and not call_id.isascii():
        bad = next(c for c in call_id if not c.isascii())
        return f"it holds the non-ASCII character U+{ord(bad):04X} (a model's ids are kept when printable ASCII)"
    if call_id.strip() != call_id:
        return "it has whitespace around it"
    return None


def call_id_from(value: object) -> str | None:
    r"""A call id as a model (or a server) sent it, the way a :class:`ToolCall` holds it.

    A readable printable-ASCII str (:func:`call_id_problem`) is kept, an int becomes its digits, anything else
    (None, "", a list, an object, a bool, text holding a newline, an escape sequence or a non-ASCII character such
    as a variation selector, or of more than
    :data:`MAX_CALL_ID_CHARS` characters) becomes None: a missing id, which the Agent replaces with a unique one
    before the step runs. Generators read wire ids with this, so an odd id never drops a reply or stops a run, and
    every id shown can be typed back.

    Examples:
        >>> [call_id_from(v) for v in ("c1", 7, "", ["x"], {"x": 1}, None, "c1\n")]
        ['c1', '7', None, None, None, None, None]
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and call_id_problem(value) is None else None


@dataclass(slots=True)
class ToolCall:
    """A tool call proposed by the model.

    Raises:
        ConfigurationTypeError: When ``id`` is neither a str nor None (a generator turns a model's id of another
            kind into a str, or drops it so the Agent gives the call one), or ``tool_name`` is not a str.
        ConfigurationError: When ``id`` is a non-empty str a person could not read and type back (a control or
            other unprintable character, whitespace around it, more than :data:`MAX_CALL_ID_CHARS` characters;
            :func:`call_id_problem`); generators read a model's id with :func:`call_id_from`, which drops it.

    Examples:
        >>> ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="call_1").arguments
        {'city': 'Oslo'}
    """

    tool_name: str
    """The name of the tool the model wants to run."""
    arguments: dict[str, Any] | str
    """The arguments as a dict, or the raw text exactly as the model sent it when that text is
    not a JSON object (the invoker then reports the problem to the model)."""
    id: str | None = None
    """The call id the model gave (repaired to a unique one before the call runs)."""
    extra: dict[str, Any] | None = None
    """Provider-specific extra data, carried along unchanged."""

    def __post_init__(self) -> None:
        call_id = self.id
        if call_id is not None and not isinstance(call_id, str):
            hint = f" (pass id={str(call_id)!r})" if isinstance(call_id, int) and not isinstance(call_id, bool) else ""
            raise ConfigurationTypeError(
                f"ToolCall id must be a str or None, got {type(call_id).__name__} {call_id!r:.80}{hint}."
            )
        problem = call_id_problem(call_id, ascii_only=False) if call_id else None  # "" counts as no id, as before
        if problem is not None:
            raise ConfigurationError(
                f"ToolCall id {call_id!r:.80} is refused: {problem}. An id must be text a person can read and type "
                f"back; pass id=None to have the Agent give the call one."
            )
        if not isinstance(self.tool_name, str):
            raise ConfigurationTypeError(
                f"ToolCall tool_name must be a str, got {type(self.tool_name).__name__} {self.tool_name!r:.80}."
            )

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"tool_name", "arguments", "id", "extra"}``."""
        return {"tool_name": self.tool_name, "arguments": self.arguments, "id": self.id, "extra": self.extra}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Rebuild a ToolCall from :meth:`to_dict` output.

        Raises:
            SerializationError: When ``data`` is not a mapping, a key is missing or unknown, or a field has the
                wrong type (naming it; a ConfigurationError when the ``id`` is unreadable).
        """
        shapes.check_tool_call_data(data)
        return _call(data)


ToolCallResultContentT = str | list[TextContent | ImageContent]
"""What a :class:`ToolCallResult` holds: text, or content parts (text and images, in order), as Haystack 2.23's."""


def _checked_result(result: object) -> ToolCallResultContentT:
    """``result`` when it is a str or a list (or tuple, made a list) of TextContent / ImageContent parts.

    Raises:
        ConfigurationTypeError: Naming the first part of another kind, or the result's own kind.
    """
    if isinstance(result, str):
        return result
    if isinstance(result, list | tuple):
        for i, part in enumerate(result):
            if not isinstance(part, TextContent | ImageContent):
                raise ConfigurationTypeError(
                    f"ToolCallResult result must be a str or a list of TextContent / ImageContent parts; "
                    f"result[{i}] is a {type(part).__name__} {part!r:.80}."
                )
        return result if isinstance(result, list) else list(result)
    raise ConfigurationTypeError(
        f"ToolCallResult result must be a str or a list of TextContent / ImageContent parts, "
        f"got {type(result).__name__} {result!r:.80}."
    )


def image_placeholder(image: ImageContent) -> str:
    """The text that stands for an image a model is not shown.

    ``[image: image/png, 12,345 bytes, not shown to this model]``: the MIME type (``unknown type`` when not known)
    and the size from the base64 text's length (the image is not decoded).

    Examples:
        >>> image_placeholder(ImageContent(base64_image="iVBORw0KGgo="))
        '[image: image/png, 8 bytes, not shown to this model]'
    """
    data = image.base64_image if isinstance(image.base64_image, str) else ""
    size = len(data.rstrip("=")) * 3 // 4
    return f"[image: {image.mime_type or 'unknown type'}, {size:,} bytes, not shown to this model]"


def result_text(result: ToolCallResult | ToolCallResultContentT, *, image_placeholders: bool = False) -> str:
    """The text of a tool call result: a ``str`` result as it is, a list's text parts joined by newlines.

    Args:
        result: A :class:`ToolCallResult`, or what its ``result`` holds.
        image_placeholders: Put :func:`image_placeholder` in each image's place (for a model, a log or a
            terminal that shows text only); by default images are left out.

    Returns:
        The text (``""`` for a list with no text part and no placeholder).

    Examples:
        >>> parts = [TextContent("The chart:"), ImageContent(base64_image="iVBORw0KGgo=")]
        >>> result_text(parts)
        'The chart:'
        >>> print(result_text(parts, image_placeholders=True))
        The chart:
        [image: image/png, 8 bytes, not shown to this model]
    """
    content = result.result if isinstance(result, ToolCallResult) else result
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in content:
        if isinstance(part, TextContent):
            texts.append(part.text)
        elif image_placeholders:
            texts.append(image_placeholder(part))
    return "\n".join(texts)


@dataclass(slots=True)
class ToolCallResult:
    """The result of running a tool call, as the model will read it.

    Raises:
        ConfigurationTypeError: When ``result`` is neither a str nor a list of TextContent / ImageContent parts
            (naming the first part of another kind); a tuple of parts is kept as a list.

    Examples:
        >>> call = ToolCall(tool_name="chart", arguments={}, id="c1")
        >>> ToolCallResult([TextContent("Sales by month:")], call, error=False).text
        'Sales by month:'
    """

    result: ToolCallResultContentT
    """The result text (a ``str`` result as is, any other result as its JSON text), or content parts: text and
    images, in order, from a tool whose ``outputs_to_string`` sets ``raw_result`` (as Haystack 2.23's). Read the
    text of either with :attr:`text`."""
    origin: ToolCall
    """The call this result answers."""
    error: bool
    """True when the call failed or was refused; the text then says why."""

    def __post_init__(self) -> None:
        self.result = _checked_result(self.result)

    @property
    def text(self) -> str:
        """The result's text: a ``str`` result as is, else its text parts joined by newlines (:func:`result_text`)."""
        return result_text(self.result)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"result", "origin", "error"}`` with ``origin`` as a ToolCall dict.

        A list result is written as Haystack 2.23 writes it: a list of part dicts, ``{"text": ...}`` and
        ``{"image": {...}}``.
        """
        result = self.result
        written: Any = result if isinstance(result, str) else [_part_to_dict(p) for p in result]
        return {"result": written, "origin": self.origin.to_dict(), "error": self.error}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallResult:
        """Rebuild a ToolCallResult; all three keys are required (``result`` a str or a list of part dicts).

        Raises:
            SerializationError: When a key is missing or unknown, or a field has the wrong type (naming it).
            ConfigurationError: When an image part is refused (see :class:`ImageContent`).
        """
        shapes.check_result_data(data)
        return _result(data)


ContentPart = TextContent | ToolCall | ToolCallResult | ImageContent | ReasoningContent


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextContent):
        return {"text": part.text}
    if isinstance(part, ToolCall):
        return {"tool_call": part.to_dict()}
    if isinstance(part, ImageContent):
        return {"image": part.to_dict()}
    if isinstance(part, ReasoningContent):
        return {"reasoning": part.to_dict()}
    return {"tool_call_result": part.to_dict()}


def _call(data: dict[str, Any]) -> ToolCall:
    return ToolCall(data["tool_name"], data["arguments"], data.get("id"), extra=data.get("extra"))


def _image(data: dict[str, Any]) -> ImageContent:
    return ImageContent(**{k: data[k] for k in data if k != "meta"}, meta=dict(data.get("meta") or {}))


def _result(data: dict[str, Any]) -> ToolCallResult:
    """A ToolCallResult from a dict :func:`~handrail.dataclasses._message_shapes.check_result_data` accepted."""
    content = data["result"]
    if not isinstance(content, str):
        content = [TextContent(p["text"]) if "text" in p else _image(p["image"]) for p in content]
    return ToolCallResult(content, _call(data["origin"]), bool(data["error"]))


def _part_from_dict(data: dict[str, Any]) -> ContentPart:
    """A part of a message dict :func:`~handrail.dataclasses._message_shapes.check_message_data` accepted."""
    if "text" in data:
        return TextContent(text=data["text"])
    if "tool_call" in data:
        return _call(data["tool_call"])
    if "image" in data:
        return _image(data["image"])
    if "reasoning" in data:
        reasoning = data["reasoning"]
        return ReasoningContent(reasoning["reasoning_text"], dict(reasoning.get("extra") or {}))
    return _result(data["tool_call_result"])


@dataclass(slots=True)
class ChatMessage:
    """One message of a conversation. Build it with the ``from_*`` factories.

    Examples:
        >>> m = ChatMessage.from_user("Ciao, città 🍎")
        >>> ChatMessage.from_dict(m.to_dict()) == m
        True
    """

    role: ChatRole
    """Who wrote the message (a plain attribute: read it, don't assign it)."""
    _content: list[ContentPart]
    """The parts, in order: text first, then tool calls (assistant) or one tool call result (tool)."""
    name: str | None = None
    """An optional author name."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free metadata; a model reply keeps ``finish_reason``, ``model`` and ``usage`` (OpenAI's names) here."""

    @property
    def texts(self) -> list[str]:
        """Every text part, in order."""
        return [p.text for p in self._content if type(p) is TextContent]

    @property
    def text(self) -> str | None:
        """The first text part, or None."""
        for p in self._content:
            if type(p) is TextContent:
                return p.text
        return None

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call, in order."""
        return [p for p in self._content if type(p) is ToolCall]

    @property
    def tool_call(self) -> ToolCall | None:
        """The first tool call, or None."""
        for p in self._content:
            if type(p) is ToolCall:
                return p
        return None

    @property
    def tool_call_results(self) -> list[ToolCallResult]:
        """Every tool call result, in order."""
        return [p for p in self._content if type(p) is ToolCallResult]

    @property
    def tool_call_result(self) -> ToolCallResult | None:
        """The first tool call result, or None."""
        for p in self._content:
            if type(p) is ToolCallResult:
                return p
        return None

    def is_from(self, role: ChatRole | str) -> bool:
        """Return True when the message has ``role`` (a ChatRole or its string value)."""
        return self.role == role

    @property
    def images(self) -> list[ImageContent]:
        """Every image part, in order."""
        return [p for p in self._content if type(p) is ImageContent]

    @property
    def image(self) -> ImageContent | None:
        """The first image part, or None."""
        for p in self._content:
            if type(p) is ImageContent:
                return p
        return None

    @property
    def reasonings(self) -> list[ReasoningContent]:
        """Every reasoning part, in order."""
        return [p for p in self._content if type(p) is ReasoningContent]

    @property
    def reasoning(self) -> ReasoningContent | None:
        """The first reasoning part, or None."""
        for p in self._content:
            if type(p) is ReasoningContent:
                return p
        return None

    @classmethod
    def from_user(
        cls,
        text: str | None = None,
        meta: dict[str, Any] | None = None,
        name: str | None = None,
        *,
        content_parts: Sequence[TextContent | str | ImageContent] | None = None,
    ) -> ChatMessage:
        """Build a user message from ``text``, or from ``content_parts`` (text and images, in order; a str is text).

        Raises:
            ConfigurationError: (a ValueError) When both or neither of ``text`` and ``content_parts`` are given,
                a part is neither text nor an image, or ``content_parts`` is empty.
            ConfigurationTypeError: When ``text`` is not a string.
        """
        if text is None and content_parts is None:
            raise ConfigurationError("ChatMessage.from_user: Either text or content_parts must be provided.")
        if text is not None and content_parts is not None:
            raise ConfigurationError("ChatMessage.from_user: Only one of text or content_parts can be provided.")
        if content_parts is None:
            if not isinstance(text, str):
                raise ConfigurationTypeError(f"ChatMessage.from_user needs a str text, got {type(text).__name__}.")
            return cls(ChatRole.USER, [TextContent(text)], name, meta or {})
        if isinstance(content_parts, str | bytes) or not isinstance(content_parts, Sequence):
            raise ConfigurationTypeError(
                f"ChatMessage.from_user needs content_parts as a list, got {type(content_parts).__name__}."
            )
        parts: list[ContentPart] = []
        for i, part in enumerate(content_parts):
            if isinstance(part, str):
                parts.append(TextContent(part))
            elif isinstance(part, TextContent | ImageContent):
                parts.append(part)
            else:
                raise ConfigurationError(
                    "ChatMessage.from_user: The user message must contain only text or image parts. "
                    f"Unsupported part: content_parts[{i}] is a {type(part).__name__} {part!r:.80}."
                )
        if not parts:
            raise ConfigurationError(
                "ChatMessage.from_user: The user message must contain at least one textual or image part."
            )
        return cls(ChatRole.USER, parts, name, meta or {})

    @classmethod
    def from_system(cls, text: str, meta: dict[str, Any] | None = None, name: str | None = None) -> ChatMessage:
        """Build a system message.

        Raises:
            ConfigurationTypeError: When ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise ConfigurationTypeError(f"ChatMessage.from_system needs a str text, got {type(text).__name__}.")
        return cls(ChatRole.SYSTEM, [TextContent(text)], name, meta or {})

    @classmethod
    def from_assistant(
        cls,
        text: str | None = None,
        meta: dict[str, Any] | None = None,
        name: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        *,
        reasoning: str | ReasoningContent | None = None,
    ) -> ChatMessage:
        """Build an assistant message: the reasoning (if any), an optional text part, then the tool calls.

        ``text=None`` adds no text part; ``text=""`` adds an empty one. ``reasoning`` is a str or a
        :class:`ReasoningContent`; an empty one adds no part.

        Raises:
            ConfigurationTypeError: When ``text`` is not a str or None, ``reasoning`` is not a str or a
                ReasoningContent, or ``tool_calls`` holds something that is not a ToolCall.
        """
        if text is not None and not isinstance(text, str):
            raise ConfigurationTypeError(
                f"ChatMessage.from_assistant needs a str text or None, got {type(text).__name__}."
            )
        parts: list[ContentPart] = []
        if reasoning:
            if isinstance(reasoning, str):
                parts.append(ReasoningContent(reasoning))
            elif isinstance(reasoning, ReasoningContent):
                parts.append(reasoning)
            else:
                raise ConfigurationTypeError(
                    f"ChatMessage.from_assistant: reasoning must be a string or a ReasoningContent object, "
                    f"got {type(reasoning).__name__}."
                )
        if text is not None:
            parts.append(TextContent(text))
        if tool_calls:
            if not isinstance(tool_calls, list | tuple):
                raise ConfigurationTypeError(
                    "ChatMessage.from_assistant needs tool_calls as a list of ToolCall, "
                    f"got {type(tool_calls).__name__}."
                )
            for call in tool_calls:
                if not isinstance(call, ToolCall):
                    raise ConfigurationTypeError(
                        f"ChatMessage.from_assistant: tool_calls holds a {type(call).__name__}, not a ToolCall."
                    )
            parts.extend(tool_calls)
        return cls(ChatRole.ASSISTANT, parts, name, meta or {})

    @classmethod
    def from_tool(
        cls,
        tool_result: ToolCallResultContentT,
        origin: ToolCall,
        error: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> ChatMessage:
        """Build a tool message holding one :class:`ToolCallResult` for ``origin``.

        ``tool_result`` is the result text, or a list of TextContent / ImageContent parts (Haystack 2.23's
        ``ToolCallResultContentT``).

        Raises:
            ConfigurationTypeError: When ``origin`` is not a ToolCall, or ``tool_result`` is neither a str nor a
                list of TextContent / ImageContent parts.
        """
        if not isinstance(origin, ToolCall):
            raise ConfigurationTypeError(f"ChatMessage.from_tool needs origin: ToolCall, got {type(origin).__name__}.")
        return cls(ChatRole.TOOL, [ToolCallResult(tool_result, origin, error)], None, meta or {})

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"role", "meta", "name", "content": [part dicts]}`` (JSON-compatible when meta is)."""
        return {
            "role": self.role.value,
            "meta": self.meta,
            "name": self.name,
            "content": [_part_to_dict(p) for p in self._content],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatMessage:
        """Rebuild a message from :meth:`to_dict` output (``data`` is not modified).

        Also reads what Haystack wrote: a ``content`` str (before 2.9), and the ``_role`` / ``_content`` /
        ``_name`` / ``_meta`` layout of 2.9 to 2.11.

        Raises:
            SerializationError: When a key is missing or unknown, a field has the wrong type or a part cannot be
                built, at any depth; the message names the field, :attr:`SerializationError.path` holds it.
        """
        data = shapes.current_layout(data)
        shapes.check_message_data(data)
        content = data["content"]
        parts: list[ContentPart] = [TextContent(content)] if isinstance(content, str) else []
        for i, part in enumerate([] if isinstance(content, str) else content):
            try:
                parts.append(_part_from_dict(part))
            except ConfigurationError as exc:  # a ToolCall's own checks (an unreadable id): say which part
                raise SerializationError(f"ChatMessage content[{i}]: {exc}", path=("content", i)) from exc
        return cls(ChatRole.from_str(data["role"]), parts, data.get("name"), dict(data.get("meta") or {}))

    def to_openai_dict_format(self, require_tool_call_ids: bool = True) -> dict[str, Any]:
        """Return the message as OpenAI's Chat API takes it (images as ``image_url`` parts; reasoning left out).

        Args:
            require_tool_call_ids: Refuse a tool call (or a tool result) without an id; pass False for
                OpenAI-compatible servers that do without.

        Raises:
            ConfigurationError: (a ValueError) When the message has no text, image, tool call or result, holds a
                tool call result beside other parts, or a tool call has no id while ``require_tool_call_ids``.
        """
        from handrail.dataclasses._openai_format import to_openai_dict

        return to_openai_dict(self, require_tool_call_ids)

    @classmethod
    def from_openai_dict_format(cls, message: dict[str, Any]) -> ChatMessage:
        """Build a message from an OpenAI Chat API message dict (``role`` ``developer`` becomes a system message).

        A ``tool_call_id`` may be missing (shallow OpenAI-compatible servers); the tool message's origin then has
        no id and an empty tool name.

        Raises:
            ConfigurationError: (a ValueError) When ``role`` is missing or unknown, a user, system or tool message
                has no content, an assistant message has neither content nor tool calls, or a tool call has no
                ``function`` or arguments that are not JSON.
        """
        from handrail.dataclasses._openai_format import from_openai_dict

        return from_openai_dict(message)

    def to_json(self) -> str:
        """Return :meth:`to_dict` as JSON text, non-ASCII kept as is."""
        return json.dumps(self.to_dict(), ensure_ascii=False)
