"""Which tool names a Tool accepts.

Any text a person can read is a tool name, spaces, punctuation and non-ASCII letters included
(``"Addition tool"``, ``"météo"``): Haystack sets no limit either. Model APIs that need names
like ``^[a-zA-Z0-9_-]{1,64}$`` get a mapped name from the generator (:func:`wire_name`, see
``handrail.components.generators.chat._wire_names``); the Tool keeps the name it was given. MCP
toolsets name their tools with :func:`wire_name` of the server's name (``calendar.read`` →
``calendar_read``).

Refused: a name that is not a ``str``, an empty or blank one, and one holding control or
invisible format characters (newlines, tabs, zero-width and bidirectional marks). A tool name
is shown to the person who approves a call, so it must print as what it is.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["WIRE_NAME_RULE", "check_tool_name", "wire_name"]

_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})
"""Unicode categories of characters that do not print as themselves (controls, format marks, separators...)."""


def check_tool_name(name: Any) -> None:
    """Refuse a tool name no person could read back; every other string is accepted.

    Raises:
        ConfigurationTypeError: When ``name`` is not a ``str``.
        ConfigurationError: When it is empty or blank, or holds a control or invisible
            character (the message names its position and code point).
    """
    if not isinstance(name, str):
        raise ConfigurationTypeError(f"A tool name must be a str, got {type(name).__name__}: {name!r}.")
    if not name.strip():
        raise ConfigurationError(f"A tool name must not be empty or blank, got {name!r}.")
    for position, char in enumerate(name):
        if unicodedata.category(char) in _HIDDEN:
            raise ConfigurationError(
                f"The tool name {name!r} holds a control or invisible character at position {position} "
                f"(U+{ord(char):04X}); a tool name must print as what it is."
            )


WIRE_NAME_RULE = "1-64 characters of a-z, A-Z, 0-9, '_' and '-'"
"""How the API's tool names look, for error messages."""

_WIRE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_KEEP = 55
"""Characters kept before the hash suffix: 55 + ``_`` + 8 hex digits = 64."""


def wire_name(name: str) -> str:
    """Return the name ``name`` is sent under (``name`` itself when it fits the API's rule).

    Examples:
        >>> wire_name("Addition tool")
        'Addition_tool'
        >>> wire_name("get_weather")
        'get_weather'
        >>> wire_name("météo") == wire_name("météo") and wire_name("météo").startswith("meteo_")
        True
    """
    if _WIRE.fullmatch(name):
        return name
    plain = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    readable = _OTHER.sub("_", plain)
    if name.isascii() and len(readable) <= 64:
        return readable
    if not any(c.isalnum() for c in readable):
        readable = "tool"
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    return f"{readable[:_KEEP]}_{digest}"
