"""A quick yes for the common message shapes of a snapshot read from JSON text (the schema's fast path).

A long history is thousands of messages of a few shapes: text, an assistant reply with tool calls, a tool
result. :func:`quick_message_ok` says yes to those in a few type checks per message; for anything else it says
no and the full checker of :mod:`handrail.dataclasses._snapshot_schema` decides (and names the field that is
wrong). It accepts only what the full checker accepts (a test holds it to that), and only for data from
``json.loads``, whose free JSON fields (``meta``, arguments, ``extra``) need no deeper check.
"""

from __future__ import annotations

from typing import Any

__all__ = ["quick_message_ok"]

_ROLES = frozenset({"user", "system", "assistant", "tool"})
_MESSAGE_KEYS = frozenset({"role", "meta", "name", "content"})
_CALL_KEYS = frozenset({"tool_name", "arguments", "id", "extra"})
_RESULT_KEYS = frozenset({"result", "origin", "error"})


def _call_ok(call: Any) -> bool:
    if type(call) is not dict or call.keys() != _CALL_KEYS:
        return False
    call_id, extra = call["id"], call["extra"]
    return (
        type(call["tool_name"]) is str
        and type(call["arguments"]) in (dict, str)
        and (call_id is None or type(call_id) is str)
        and (extra is None or type(extra) is dict)
    )


def _part_ok(part: Any) -> bool:
    if type(part) is not dict or len(part) != 1:
        return False
    if "text" in part:
        return type(part["text"]) is str
    if "tool_call" in part:
        return _call_ok(part["tool_call"])
    result = part.get("tool_call_result")
    return (
        type(result) is dict
        and result.keys() == _RESULT_KEYS
        and type(result["result"]) is str
        and type(result["error"]) is bool
        and _call_ok(result["origin"])
    )


def quick_message_ok(value: Any) -> bool:
    """True when ``value`` (from ``json.loads``) is a message of a common, valid shape; False: check it fully."""
    if type(value) is not dict or value.keys() != _MESSAGE_KEYS:
        return False
    role, meta, name, content = value["role"], value["meta"], value["name"], value["content"]
    if type(role) is not str or role not in _ROLES or type(meta) is not dict or type(content) is not list:
        return False
    if name is not None and type(name) is not str:
        return False
    return all(map(_part_ok, content))
