"""The confirmation a tool may bring itself (see ``confirmation_default`` of the MCP tools).

A Tool may carry an attribute ``confirmation_default``: None (its calls run without asking, as every plain Tool's),
a confirmation strategy object, or :data:`ASK`. The Agent uses it only for a tool its ``confirmation_strategies``
say nothing about; an explicit strategy always wins.
"""

from __future__ import annotations

__all__ = ["ASK"]

ASK = "ask"
"""``confirmation_default`` of a tool that asks a person through the Agent's default strategy (a console prompt:
``BlockingConfirmationStrategy(AlwaysAskPolicy(), SimpleConsoleUI())``)."""
