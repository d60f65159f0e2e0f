"""Importable helpers for the agent-file tests."""

from __future__ import annotations

from handrail.tools import tool


def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


class NeedsReplies:
    """A user's chat generator whose constructor raises KeyError when a file gives it no ``replies``."""

    def __init__(self, **kwargs: object) -> None:
        self.replies = kwargs["replies"]

    def run(self, messages: list[object], tools: object = None) -> dict[str, list[object]]:
        """Never called by the tests."""
        raise AssertionError("not run")


class BrokenRun:
    """A user's chat generator that is built fine but raises IndexError when it runs."""

    def run(self, messages: list[object], tools: object = None, **kwargs: object) -> dict[str, list[object]]:
        """Fail as user code can."""
        return {"replies": [[][0]]}


class Exits:
    """A user's chat generator whose constructor calls sys.exit(3)."""

    def __init__(self, **kwargs: object) -> None:
        raise SystemExit(3)

    def run(self, messages: list[object], tools: object = None) -> dict[str, list[object]]:
        """Never called by the tests."""
        raise AssertionError("not run")


class Interrupted:
    """A user's chat generator whose constructor is interrupted by Ctrl-C."""

    def __init__(self, **kwargs: object) -> None:
        raise KeyboardInterrupt

    def run(self, messages: list[object], tools: object = None) -> dict[str, list[object]]:
        """Never called by the tests."""
        raise AssertionError("not run")


class Flagged:
    """A user's chat generator (no from_dict) with a bool and an int setting."""

    def __init__(self, verbose: bool = False, retries: int = 1) -> None:
        self.verbose = verbose
        self.retries = retries

    def run(self, messages: list[object], tools: object = None) -> dict[str, list[object]]:
        """Never called by the tests."""
        raise AssertionError("not run")


@tool(name="Addition tool")
def addition(a: int, b: int) -> int:
    """Add two numbers (a tool named with a space, as Haystack allows)."""
    return a + b
