"""The pause and finish effects of the step machine, kept apart from the snapshot machinery.

They are all the machine and the drivers need to know of breakpoints and durable runs; the modules that
build and write snapshots (``_checkpoints``, ``_ledger``) load only when a run uses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    from handrail.components.agents._checkpoints import Checkpoints
    from handrail.dataclasses.chat_message import ToolCall
    from handrail.dataclasses.snapshot import AgentSnapshot
    from handrail.dataclasses.state import State

__all__ = ["Finish", "Pause", "Position", "UnknownOutcome", "check_unknown_outcome"]

Position = Literal["chat_generator", "tool_invoker"]
UnknownOutcome = Literal["retry", "fail"] | None
_UNKNOWN_OUTCOMES = (None, "retry", "fail")


def check_unknown_outcome(value: Any) -> UnknownOutcome:
    """Validate ``unknown_outcome`` (None, "retry" or "fail").

    Raises:
        ConfigurationError: Any other value.
    """
    if value not in _UNKNOWN_OUTCOMES:
        raise ConfigurationError(f"unknown_outcome must be None, 'retry' or 'fail', got {value!r}.")
    return value  # type: ignore[no-any-return]


@dataclass(slots=True)
class Pause:
    """Effect: stop the run here. The driver writes the snapshot and raises the breakpoint exception."""

    checkpoints: Checkpoints
    snapshot: AgentSnapshot
    held: list[ToolCall]
    """Calls held for a decision (empty for a debugging breakpoint)."""

    def execute(self) -> NoReturn:
        """Write and raise."""
        raise self.checkpoints.pause(self.snapshot, self.held)


@dataclass(slots=True)
class Finish:
    """Effect: the run ended; mark its durable record done. Answer with None."""

    checkpoints: Checkpoints
    state: State

    def execute(self) -> None:
        """Write the ``done`` record."""
        self.checkpoints.finish(self.state)
