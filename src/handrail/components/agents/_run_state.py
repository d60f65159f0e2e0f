"""What one run carries between its effects, in one place.

The run's plan (:class:`~handrail.components.agents._machine.RunPlan`) is what a run knows when it starts and never
changes; :class:`RunState` is everything that changes: the history and State data, counters and visit counts, the
ledger of tool calls, the calls of the current step (pending, held for a decision, decided), and where a resumed
run re-enters its first step. A snapshot is this state encoded (with the plan's fingerprint and the schema version).
The step machine writes it; the run's context reads what a driver needs from it (the tools offered at this step,
the live invocations of the last tool effect, the calls held at a pause).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from handrail.components.tools._effects import Bound
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.state import State

if TYPE_CHECKING:
    from handrail.components.agents._confirm import Applied
    from handrail.components.agents._ledger import Ledger
    from handrail.components.effects import Position
    from handrail.tools.tool import Tool

__all__ = ["RunState", "StepStart"]


@dataclass(slots=True)
class StepStart:
    """A tool step as it began: what a durable write of that step records (history up to the calls, State, visits)."""

    messages: list[ChatMessage]
    state: dict[str, Any]
    visits: dict[str, int]
    tool_visits: dict[str, int]


@dataclass(slots=True, eq=False)
class RunState:
    """Everything a run carries between effects.

    Args:
        state: The run's State: ``messages`` (the history), the user's keys and the counters ``step_count``,
            ``token_usage``, ``tool_call_counts``, ``exit_reason``, ``stop_run``, ``continue_run``.
        enter: Where a resumed run re-enters its first step, None for a fresh run (or once re-entered).
        visits: Completed visits of the chat generator and of the tool step (what breakpoints count).
        tool_visits: Completed tool steps per tool name.
        ledger: What happened to each tool call, by call id (durable runs, pausing strategies, resumes), or None.
    """

    state: State
    enter: Position | None = None
    visits: dict[str, int] = field(default_factory=lambda: {"chat_generator": 0, "tool_invoker": 0})
    tool_visits: dict[str, int] = field(default_factory=dict)
    ledger: Ledger | None = None
    seen: set[str] = field(default_factory=set)
    """Call ids used so far in this run (a repeated or missing id gets a new one)."""
    step_calls: list[ToolCall] = field(default_factory=list)
    """The calls of the current tool step."""
    held: list[ToolCall] = field(default_factory=list)
    """Calls of the current step held for a decision by a pausing strategy (the run then pauses)."""
    applied: dict[str, Applied] = field(default_factory=dict)
    """Decisions applied in the current step, by call id (the step's history is laid out from them)."""
    step_start: StepStart | None = None
    """The current tool step as it began (durable runs and breakpoints only)."""
    offered: list[Tool] = field(default_factory=list)
    """The tools offered to the model at this step (a dynamic Toolset may change them between steps)."""
    bound: Bound = field(default_factory=Bound)
    """The live invocations of the last ``RunTools`` / ``AskApproval`` effect, for the run's context."""

    @property
    def data(self) -> dict[str, Any]:
        """The State's data (``messages`` and the counters included)."""
        return self.state.data

    def end_step(self, calls: list[ToolCall]) -> None:
        """A tool step finished: count the visits and forget the step's calls and decisions."""
        self.visits["tool_invoker"] += 1
        for name in {c.tool_name for c in calls}:
            self.tool_visits[name] = self.tool_visits.get(name, 0) + 1
        self.step_start = None
        if self.ledger is not None:
            self.ledger.end_step()
