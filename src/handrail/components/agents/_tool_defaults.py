"""Confirmation a tool brings itself: used for its calls when the Agent's ``confirmation_strategies`` has none.

A tool (an MCP server's tool, see :mod:`handrail.tools.mcp`) may carry ``confirmation_default``: ``None`` (run
without asking, the default of every Tool), a confirmation strategy object, or :data:`ASK` (ask a person through
the Agent's default, a console prompt: ``BlockingConfirmationStrategy(AlwaysAskPolicy(), SimpleConsoleUI())``).
An explicit strategy of the Agent for the tool's name (exact, a tuple holding it, or ``"*"``) always wins, both
ways: the tool's default never loosens nor tightens what the user configured.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from handrail.tools._confirmation import ASK

__all__ = ["default_strategy", "may_ask_by_default", "with_tool_defaults"]


@functools.cache
def _console_strategy() -> Any:
    from handrail.human_in_the_loop.policies import AlwaysAskPolicy
    from handrail.human_in_the_loop.strategies import BlockingConfirmationStrategy
    from handrail.human_in_the_loop.user_interfaces import SimpleConsoleUI

    return BlockingConfirmationStrategy(AlwaysAskPolicy(), SimpleConsoleUI())


def default_strategy(tool: object) -> Any:
    """The strategy ``tool`` brings for its calls (None: it runs without asking)."""
    wanted = getattr(tool, "confirmation_default", None)
    if wanted is None:
        return None
    if isinstance(wanted, str):
        return _console_strategy() if wanted == ASK else None
    return wanted


def may_ask_by_default(run_tools: Iterable[object], flat: Iterable[object]) -> bool:
    """Whether a tool of the run, or one a toolset of it may add later, brings its own confirmation."""
    return any(getattr(t, "tools_may_ask", False) for t in run_tools) or any(
        default_strategy(t) is not None for t in flat
    )


def with_tool_defaults(strategies: Mapping[Any, Any] | None, flat: Iterable[object], explicit: Any) -> dict[Any, Any]:
    """``strategies`` plus, under its name, the default of each tool of ``flat`` that none of them covers.

    Args:
        strategies: The Agent's ``confirmation_strategies``.
        flat: The run's tools now.
        explicit: ``find_strategy`` (the lookup of an explicit strategy by tool name).
    """
    out = dict(strategies or {})
    for tool in flat:
        name = getattr(tool, "name", None)
        found = default_strategy(tool)
        if found is not None and isinstance(name, str) and explicit(strategies, name) is None:
            out[name] = found
    return out
