"""A workflow run's snapshot before a model call: what it continues as new from."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from handrail.components.agents._resume import fingerprint_of
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint
from handrail.dataclasses.snapshot import AgentSnapshot
from handrail.tools.utils import flatten_tools

__all__ = ["snapshot_at_model"]


def snapshot_at_model(run: Any, agent: Any, now: datetime) -> AgentSnapshot:
    """The snapshot of ``run`` (an AgentRun) as it is about to call the model: resumed, it makes that call."""
    rs = run._started.run
    data = rs.state.data
    visits = dict(rs.visits)
    return AgentSnapshot(
        messages=list(data["messages"]),
        state={k: v for k, v in data.items() if k != "messages"},
        component_visits=visits,
        break_point=AgentBreakpoint("", Breakpoint("chat_generator", visits["chat_generator"])),
        position="chat_generator",
        tool_visits=dict(rs.tool_visits),
        fingerprint=fingerprint_of(flatten_tools(agent.tools), agent),
        timestamp=now,
    )
