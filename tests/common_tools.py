"""The toy tools many tests share (``echo``, ``add``, ``get_weather``), importable by dotted path.

They stay in the test suite rather than :mod:`handrail.testing`: a user's tests need their own tools, while the
fake models and message builders there serve any test. Serialization tests assert these paths
(``tests.common_tools.add``).
"""

from __future__ import annotations

from handrail.tools import tool

CALLS: list[tuple[str, str]] = []
"""Side-effect log of :data:`get_weather`: ``(tool name, argument)`` per call; a test that reads it clears it first."""


def echo(text: str) -> str:
    """Echo the text."""
    return text


def add(a: int, b: int = 1) -> int:
    """Add two integers."""
    return a + b


@tool
def get_weather(location: str) -> str:
    """Get the weather for a location."""
    CALLS.append(("get_weather", location))
    return f"Sunny in {location}"


SENT: list[int] = []
"""Side-effect log of :data:`transfer`: the amounts sent; a test that reads it clears it first."""


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    SENT.append(amount)
    return f"sent {amount}"


def lookup(q: str) -> str:
    """Look a thing up.

    Args:
        q: What.
    """
    return f"found {q}"
