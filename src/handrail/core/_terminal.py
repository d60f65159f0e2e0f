r"""Text chosen by a model, a tool or a file, made safe to print on a terminal.

Printed raw, an escape sequence (``\x1b[1A\x1b[2K``, ``\r``) in a tool argument could rewrite the lines
above it, so a person would approve other arguments than the ones that run. The CLI and the console
approval UIs print such text through :func:`printable` and :func:`terminal_json`, which also mask the
value of every known secret (:func:`handrail.core.secret.mask_secrets`), such as a key a server echoed.
"""

from __future__ import annotations

import re

from handrail.core.secret import mask_secrets

__all__ = ["printable", "terminal_json"]

# Characters a terminal may act on: C0 controls (ESC, CR, BEL, ...), DEL and C1 controls, line and paragraph
# separators, and the bidirectional controls that reorder what is shown.
_CONTROLS = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_CONTROLS}]")
_UNSAFE_BUT_LINES = re.compile(f"(?![\n\t])[{_CONTROLS}]")
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(value: object, *, keep_newlines: bool = False) -> str:
    r"""``str(value)`` with every control character written as an escape (``\x1b``, ``\r``, ``\u202e``).

    Use it for anything a model, a tool or a file chose before printing it. Spaces and other text
    (non-ASCII included) stay as they are.

    Args:
        value: What to show.
        keep_newlines: Keep newlines and tabs (multi-line text such as an answer); else they are shown
            as ``\n`` and ``\t`` so the value stays on one line.

    Returns:
        The text, holding no character a terminal acts on (but newlines and tabs with ``keep_newlines``),
        and no known secret value.
    """
    return (_UNSAFE_BUT_LINES if keep_newlines else _UNSAFE).sub(_escape, mask_secrets(str(value)))


def terminal_json(text: str) -> str:
    r"""JSON text from ``json.dumps(..., ensure_ascii=False)`` with the characters it leaves raw escaped.

    ``json.dumps`` escapes C0 controls but not DEL, C1 or bidirectional controls; those are written as
    ``\uXXXX`` escapes too, so the result is the same JSON data and holds no character a terminal acts on.

    Args:
        text: A JSON document.

    Returns:
        The same JSON data, safe to print, with known secret values masked.
    """
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", mask_secrets(text))
