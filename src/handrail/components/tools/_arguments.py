"""A tool call's arguments and id: repaired so a snapshot can hold them, and parsed by the snapshot's JSON.

Ids: a call keeps the model's id when it is printable ASCII and not used yet in the run, else it gets
``call_<position>`` or ``<id>#2``..., deterministically. Arguments: JSON data is kept; anything else becomes text
showing what was sent, which the parse then refuses with the reason, as an error result the model can read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from handrail.core.json_data import JSONDataError, json_problem, parse_json, problem_text, shown_text, writable_text
from handrail.dataclasses.chat_message import ToolCall, call_id_problem

__all__ = ["clip", "parse_arguments", "repair_calls", "writable_arguments"]


def _own_id(call_id: object) -> str | None:
    """The model's id when a person can read it and type it back (printable ASCII: :func:`call_id_problem`), else None.

    A ToolCall changed after it was built may hold anything; an id holding a newline or an escape sequence would
    be shown as something else than the text ``--call`` matches, so it is replaced like a missing one.
    """
    return call_id if isinstance(call_id, str) and call_id and call_id_problem(call_id) is None else None


def writable_arguments(arguments: dict[str, Any] | str) -> dict[str, Any] | str:
    r"""``arguments`` itself when a snapshot can hold them, else text showing what was sent (its parse refuses it).

    JSON data (:mod:`handrail.core.json_data`) is kept. Text with a surrogate code point gets ``\uXXXX``
    escapes in its place; any other value (a dict holding NaN, a lone surrogate or an object, or nested more
    than :data:`~handrail.core.json_data.MAX_DEPTH` levels) becomes :func:`~handrail.core.json_data.shown_text`,
    which :func:`parse_arguments` refuses with the reason.
    """
    if isinstance(arguments, str):
        return writable_text(arguments)
    return arguments if json_problem(arguments) is None else shown_text(arguments)  # a dict not of JSON: its text


def _repaired(call: ToolCall, call_id: str) -> ToolCall:
    arguments = writable_arguments(call.arguments)
    if call_id == call.id and arguments is call.arguments:
        return call
    return ToolCall(tool_name=call.tool_name, arguments=arguments, id=call_id, extra=call.extra)


def repair_calls(calls: list[ToolCall], seen: set[str]) -> list[ToolCall]:
    """Give every call a unique id and arguments a snapshot can hold, deterministically (the same input, the same ids).

    Args:
        calls: The calls of one step, in order.
        seen: Ids already used in this run; updated in place.

    Returns:
        ``calls`` itself when nothing needed repair (single-call fast path), else a new list where the calls
        whose id was missing, empty, not a str, not readable (:func:`call_id_problem`) or already used get
        ``call_<position>`` (1-based) or ``<id>#2``, ``#3``..., and arguments that are not JSON data are replaced by
        :func:`writable_arguments`. Calls are never dropped or merged.
    """
    if len(calls) == 1:
        cid = _own_id(calls[0].id)
        if cid is not None and cid not in seen and writable_arguments(calls[0].arguments) is calls[0].arguments:
            seen.add(cid)
            return calls
    out: list[ToolCall] = []
    suffixes: dict[str, int] = {}
    own = [_own_id(c.id) for c in calls]
    claimed = {cid for cid in own if cid is not None and cid not in seen}  # the model's own ids keep priority
    for position, (call, cid) in enumerate(zip(calls, own, strict=True), start=1):
        if cid is not None and cid not in seen:
            seen.add(cid)
            out.append(_repaired(call, cid))
            continue
        base = cid or f"call_{position}"
        candidate, n = base, suffixes.get(base, 1)
        while candidate in seen or (candidate != cid and candidate in claimed):
            n += 1
            candidate = f"{base}#{n}"
        suffixes[base] = n
        seen.add(candidate)
        out.append(_repaired(call, candidate))
    return out


_SHOWN_CHARS = 500


def clip(value: object) -> str:
    """``repr``-like text of a value the model sent, cut to a readable length (always writable text)."""
    shown = repr(value) if isinstance(value, str) else shown_text(value)
    return shown if len(shown) <= _SHOWN_CHARS else shown[:_SHOWN_CHARS] + f"… ({len(shown)} characters)"


def parse_arguments(call: ToolCall) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a call's arguments (a JSON object, or an empty string for none), by the JSON the snapshot writer uses.

    Text is read with :func:`~handrail.core.json_data.parse_json`; a dict must be JSON data too. So NaN,
    Infinity, a lone surrogate and nesting deeper than :data:`~handrail.core.json_data.MAX_DEPTH` levels are
    refused here, before validation, and every call that runs can be written to a snapshot.

    Returns:
        ``(arguments, None)``, or ``(None, error text)`` for invalid JSON, a value that is not JSON data, or a
        non-object.
    """
    raw = call.arguments
    if type(raw) is dict or (type(raw) is not str and isinstance(raw, Mapping)):  # no ABC check for a dict or str
        value: Any = raw if type(raw) is dict else dict(raw)
        problem = json_problem(value)
        if problem is None:
            return value, None
        reason = problem_text(problem)
        return None, f"Arguments for tool '{call.tool_name}' are not valid JSON ({reason}). Received: {clip(raw)}"
    if not isinstance(raw, str):
        return None, f"Arguments for tool '{call.tool_name}' must be a JSON object, got {type(raw).__name__}."
    if not raw.strip():
        return {}, None
    try:
        value = parse_json(raw)
    except JSONDataError as exc:
        return None, f"Arguments for tool '{call.tool_name}' are not valid JSON ({exc}). Received: {clip(raw)}"
    if not isinstance(value, dict):
        return None, (
            f"Arguments for tool '{call.tool_name}' must be a JSON object, got {json.dumps(value)}. "
            f"Send the arguments as an object such as {{}}."
        )
    return value, None
