r"""Text the console UIs show, made safe for a terminal.

Tool names, descriptions, argument keys and values, and State values are chosen by the model, a tool
or a file. Printed raw, an escape sequence in them (``\x1b[1A\x1b[2K``, ``\r``) could rewrite the
lines above, so the person would approve other arguments than the ones that run. Every control
character is shown as an escape instead (:mod:`handrail.core._terminal`, which the CLI uses too).
"""

from __future__ import annotations

import json
from typing import Any

from handrail.core._terminal import printable, terminal_json
from handrail.human_in_the_loop._nested import encode_json

__all__ = ["printable", "show_value"]


def show_value(value: Any) -> str:
    r"""Render an argument as the person types it: a string raw, anything else as JSON; safe for a terminal.

    A plain string is shown as it is; one holding a control character or a backslash is shown as a quoted
    JSON string, so a real newline (``"a\nb"``) and the two characters backslash and n (``"a\\nb"``) look
    different. JSON already escapes C0 controls; DEL, C1 and bidirectional controls are written as
    ``\uXXXX`` too, so the text is the same JSON data.
    Arguments nested deeper than the recursion limit are rendered too.

    Args:
        value: An argument value (JSON-like; other objects are shown through ``str``).

    Returns:
        One line of text (``repr`` for a value JSON cannot hold, such as a reference cycle).
    """
    if isinstance(value, str):
        shown = printable(value)
        if shown == value and "\\" not in value:
            return value
        # Escapes alone would show a real newline and the two characters \n alike: quote it as JSON instead.
        return terminal_json(json.dumps(value, ensure_ascii=False))
    try:
        text = encode_json(value)
    except (TypeError, ValueError):  # not JSON data (a tuple key, a cycle): shown, never typed back
        return printable(repr(value))
    return terminal_json(text)
