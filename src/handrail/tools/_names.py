"""Which tool names a Tool accepts.

Any text a person can read is a tool name, spaces, punctuation and non-ASCII letters included
(``"Addition tool"``, ``"météo"``): Haystack sets no limit either. Model APIs that need names
like ``^[a-zA-Z0-9_-]{1,64}$`` get a mapped name from the generator (see
``handrail.components.generators.chat._wire_names``); the Tool keeps the name it was given.

Refused: a name that is not a ``str``, an empty or blank one, and one holding control or
invisible format characters (newlines, tabs, zero-width and bidirectional marks). A tool name
is shown to the person who approves a call, so it must print as what it is.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from handrail.errors import ConfigurationError, ConfigurationTypeError

__all__ = ["check_tool_name"]

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
