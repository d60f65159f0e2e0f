"""Turning tool results into text (a ``str`` as is, anything else as JSON), or content parts, and State updates.

A tool whose ``outputs_to_string`` sets ``raw_result`` gives its result to the model as it is: a ``str``, or a list
of :class:`~handrail.dataclasses.chat_message.TextContent` / :class:`~handrail.dataclasses.image_content.ImageContent`
parts (Haystack 2.23's tool results with images); anything else it returns is an error result.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from handrail.core.json_data import writable_text
from handrail.core.secret import Secret, mask_secrets
from handrail.dataclasses.chat_message import ImageContent, TextContent, ToolCallResultContentT
from handrail.dataclasses.state import State
from handrail.errors import StringConversionError, ToolOutputMergeError
from handrail.tools.tool import Tool

__all__ = ["convert_result", "describe_exception", "failure_message_text", "merge_outputs", "result_message_text",
           "result_to_text", "tool_result_text"]  # fmt: skip


def _json_default(value: Any) -> Any:
    """One object ``json.dumps`` cannot write itself, one level deep: json meets what it holds in turn.

    A dataclass gives its fields (never ``dataclasses.asdict``, which would copy a Secret's value out of it);
    a Secret, met wherever it is nested, gives its ``repr`` (``Secret.from_token('***')``).
    """
    if isinstance(value, Secret):
        return repr(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def result_to_text(value: Any, json_strings: bool = False) -> str:
    """Convert a tool result to the text the model reads: a ``str`` as is, anything else as JSON.

    Args:
        value: What the tool returned.
        json_strings: When True, strings are JSON-encoded (quoted) too.

    Returns:
        A ``str`` result unchanged (unless ``json_strings``); anything else as JSON with non-ASCII
        kept (objects with ``to_dict`` first, then dataclasses field by field); ``str(value)`` when
        it cannot be JSON-encoded. A :class:`~handrail.core.secret.Secret` anywhere inside becomes its
        ``repr`` (``"Secret.from_token('***')"``), and the value of a known secret anywhere in the text
        (a ``to_dict`` or ``__str__`` that copied it out) becomes ``***`` (:func:`~handrail.core.secret.mask_secrets`).
    """
    return mask_secrets(_unmasked_text(value, json_strings))


def _unmasked_text(value: Any, json_strings: bool) -> str:
    if isinstance(value, str) and not json_strings:
        return str.__str__(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        pass
    try:
        return str(value)
    except Exception as exc:
        raise StringConversionError(
            f"The result ({type(value).__name__}) could not be turned into text: {_safe_str(exc)}"
        ) from exc


def _safe_str(value: object) -> str:
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__} whose str() failed>"


def _apply_handler(tool: Tool, handler: Any, value: Any) -> Any:
    try:
        return handler(value)
    except Exception as exc:
        name = getattr(handler, "__name__", repr(handler))
        raise StringConversionError(
            f"Failed to convert the result of tool '{tool.name}' with '{name}': {type(exc).__name__}: {exc}"
        ) from exc


def tool_result_text(tool: Tool, value: Any, json_strings: bool) -> ToolCallResultContentT:
    r"""Apply the tool's ``outputs_to_string`` config (if any) and return the result text (or content parts).

    A surrogate code point in the text (UTF-8 cannot write one) becomes its ``\uXXXX`` escape, so the tool
    message and the ledger can always be written (:func:`handrail.core.json_data.writable_text`); so it does in
    each text part of a ``raw_result`` list.

    Raises:
        StringConversionError: When a handler raises, or ``raw_result`` is set and the value is neither a str nor
            a list of TextContent / ImageContent parts.
    """
    content = _result_text(tool, value, json_strings)
    return writable_text(content) if isinstance(content, str) else content


def convert_result(tool: Tool, value: Any, json_strings: bool) -> ToolCallResultContentT:
    """:func:`tool_result_text`, with any failure of the conversion raised as a :class:`StringConversionError`.

    Raises:
        StringConversionError: The result cannot be turned into text (also when its own ``to_dict()`` or
            ``__str__`` raises; that error is the cause).
    """
    try:
        return tool_result_text(tool, value, json_strings)
    except StringConversionError:
        raise
    except Exception as exc:  # a result whose conversion itself fails (e.g. a to_dict() that raises)
        raise StringConversionError(
            f"The result of tool '{tool.name}' could not be turned into text: {describe_exception(exc)}"
        ) from exc


def result_message_text(
    tool: Tool, call_id: str | None, value: Any, json_strings: bool
) -> tuple[ToolCallResultContentT, bool]:
    """The text (or content parts) of the tool message for a call that returned ``value``, and whether it is an error.

    The text the model reads (:func:`tool_result_text`), or, when the result cannot be turned into text, the
    error text it reads instead, the same the tool step writes (:func:`failure_message_text`). The ledger
    records this, so a resumed run gives the model the same message even when the value itself cannot be
    recorded.
    """
    try:
        return convert_result(tool, value, json_strings), False
    except StringConversionError as exc:
        return failure_message_text(exc, call_id), True


def failure_message_text(exc: Exception, call_id: str | None) -> str:
    """The error result text for a result that could not be turned into text or merged into State."""
    return writable_text(f"{exc} (call '{call_id}')")


def _raw_result(tool: Tool, value: Any) -> ToolCallResultContentT:
    """A ``raw_result`` value as the model reads it: a str, or content parts (their text masked and writable).

    Raises:
        StringConversionError: For a value of another kind, naming the first part that is not text or an image.
    """
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list | tuple):
        parts: list[TextContent | ImageContent] = []
        for i, part in enumerate(value):
            if isinstance(part, ImageContent):
                parts.append(part)
            elif isinstance(part, TextContent):
                text = writable_text(mask_secrets(part.text))
                parts.append(part if text == part.text else TextContent(text))
            else:
                raise StringConversionError(
                    f"Tool '{tool.name}' has raw_result=True but produced a {type(value).__name__} whose item [{i}] "
                    f"is a {type(part).__name__}; a raw result is a str or a list of TextContent / ImageContent parts."
                )
        return parts
    raise StringConversionError(
        f"Tool '{tool.name}' has raw_result=True but produced {type(value).__name__}, not a str or a list of "
        f"TextContent / ImageContent parts."
    )


def _result_text(tool: Tool, value: Any, json_strings: bool) -> ToolCallResultContentT:
    config = tool.outputs_to_string
    if not config:
        return result_to_text(value, json_strings)
    if all(not isinstance(v, Mapping) for v in config.values()):
        source = config.get("source")
        if source is not None and isinstance(value, Mapping):
            value = value.get(source)
        handler = config.get("handler")
        if handler is not None:
            value = _apply_handler(tool, handler, value)
        if config.get("raw_result"):
            return _raw_result(tool, value)
        return result_to_text(value, json_strings)
    if not isinstance(value, Mapping):
        raise StringConversionError(
            f"Tool '{tool.name}' has a multi-key outputs_to_string config but returned {type(value).__name__}, "
            f"not a dict."
        )
    parts: dict[str, str] = {}
    for key, entry in config.items():
        if entry["source"] not in value:
            continue
        item = value[entry["source"]]
        if entry.get("handler") is not None:
            item = _apply_handler(tool, entry["handler"], item)
        parts[key] = result_to_text(item)
    return json.dumps(parts, ensure_ascii=False)


def merge_outputs(tool: Tool, value: Any, state: State) -> None:
    """Write a dict result into State through the tool's ``outputs_to_state``.

    A missing ``source`` key is skipped; no source stores the whole result.

    Raises:
        ToolOutputMergeError: When a State key is unknown or a handler raises.
    """
    config = tool.outputs_to_state
    if not config or not isinstance(value, Mapping):
        return
    for state_key, entry in config.items():
        source = entry.get("source")
        if source is not None and source not in value:
            continue
        item = value[source] if source is not None else value
        try:
            state.set(state_key, item, handler_override=entry.get("handler"))
        except Exception as exc:
            raise ToolOutputMergeError(
                f"Failed to merge the outputs of tool '{tool.name}' into State key '{state_key}': "
                f"{type(exc).__name__}: {exc}"
            ) from exc


def describe_exception(exc: BaseException) -> str:
    """Describe an exception with its type, message and root cause, known secret values masked.

    Returns:
        ``"Type: message"``, followed by ``" (root cause: Type: message)"`` when the chain of
        ``__cause__`` / ``__context__`` leads to another exception.
    """
    text = f"{type(exc).__name__}: {_safe_str(exc)}"
    root: BaseException = exc
    seen = {id(exc)}
    while True:
        nxt = root.__cause__ or root.__context__
        if nxt is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        root = nxt
    if root is not exc:
        text += f" (root cause: {type(root).__name__}: {_safe_str(root)})"
    return mask_secrets(text)
