"""Breakpoints of an Agent run and the signals raised when a run stops at one.

A :class:`Breakpoint` stops a run before the chat generator is called; a :class:`ToolBreakpoint`
before a tool step (of one named tool, or any). :class:`AgentBreakpoint` names the agent. When the
run stops, :class:`BreakpointException` carries the :class:`~handrail.dataclasses.snapshot.AgentSnapshot`
to resume from; :class:`HITLBreakpointException` is raised when a tool call needs a person's decision.
Both are control-flow signals, not errors (they do not derive from ``HandrailError``).

Examples:
    >>> bp = AgentBreakpoint("helper", ToolBreakpoint(tool_name="transfer", visit_count=1))
    >>> AgentBreakpoint.from_dict(bp.to_dict()) == bp
    True
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    from handrail.core._pipeline_pause import PausedRun
    from handrail.dataclasses.chat_message import ChatMessage
    from handrail.dataclasses.pipeline_snapshot import PipelineSnapshot
    from handrail.dataclasses.snapshot import AgentSnapshot

__all__ = ["AgentBreakpoint", "Breakpoint", "BreakpointException", "HITLBreakpointException", "ToolBreakpoint"]


def _check_visit_count(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"visit_count must be an int >= 0, got {value!r}.")


def _directory(value: str | os.PathLike[str] | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str) and path.strip():
            return path
        if isinstance(path, str):
            raise ConfigurationError("snapshot_file_path is empty; give a directory, or None to write no file.")
    raise ConfigurationError(f"snapshot_file_path must be a directory path (str or os.PathLike), got {value!r}.")


def _checked_fields(cls: type, data: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigurationError(f"{cls.__name__}.from_dict needs a dict, got {type(data).__name__}.")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise ConfigurationError(f"{cls.__name__} data has unknown keys {unknown}; expected some of {list(allowed)}.")
    return dict(data)


@dataclass(frozen=True, init=False)
class Breakpoint:
    """Stop a run before a component: any component of a Pipeline, or an Agent's chat generator.

    Args:
        component_name: The Pipeline component to stop before; for an Agent (alone, or in an
            :class:`AgentBreakpoint`) it must be ``"chat_generator"``.
        visit_count: Completed visits before the stop: 0 stops before the first run (model call), 1 before the
            second.
        snapshot_file_path: A directory to write the snapshot file into (str or os.PathLike; stored as str);
            None writes no file. A run given the breakpoint refuses, before anything runs, a path that is an
            existing file (or lies inside one).

    Raises:
        ConfigurationError: For an empty component name, a visit_count that is not an int >= 0 (bools refused),
            or a snapshot_file_path that is not a path.
    """

    component_name: str
    """The component: a Pipeline's component name, or ``"chat_generator"`` / ``"tool_invoker"`` in an Agent."""
    visit_count: int
    """Completed visits of the component before the run stops (0 = before the first)."""
    snapshot_file_path: str | None
    """The directory the snapshot file is written into; None writes none."""

    def __init__(
        self,
        component_name: str = "chat_generator",
        visit_count: int = 0,
        snapshot_file_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if not isinstance(component_name, str) or not component_name:
            raise ConfigurationError(f"Breakpoint.component_name must be a non-empty str, got {component_name!r}.")
        _check_visit_count(visit_count)
        object.__setattr__(self, "component_name", component_name)
        object.__setattr__(self, "visit_count", visit_count)
        object.__setattr__(self, "snapshot_file_path", _directory(snapshot_file_path))

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"component_name", "visit_count", "snapshot_file_path"}``."""
        return {
            "component_name": self.component_name,
            "visit_count": self.visit_count,
            "snapshot_file_path": self.snapshot_file_path,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Breakpoint:
        """Rebuild a breakpoint; a dict with a ``"tool_name"`` key gives a :class:`ToolBreakpoint`.

        Raises:
            ConfigurationError: For unknown keys or invalid values.
        """
        if cls is Breakpoint and isinstance(data, dict) and "tool_name" in data:
            return ToolBreakpoint.from_dict(data)
        return cls(**_checked_fields(cls, data, ("component_name", "visit_count", "snapshot_file_path")))

    def _pause_pipeline(self, paused: PausedRun) -> NoReturn:
        """Stop a Pipeline run here: write the snapshot when a directory is set, raise BreakpointException."""
        from handrail.dataclasses.pipeline_snapshot import PipelineSnapshot, write_pipeline_snapshot

        snapshot = PipelineSnapshot._from_paused(paused, self)
        path = write_pipeline_snapshot(snapshot, self.snapshot_file_path) if self.snapshot_file_path else None
        message = f"Breaking at component {self.component_name} at visit count {self.visit_count}"
        error = BreakpointException(message + (f" Snapshot: {path}" if path else ""))
        error.component = self.component_name
        error.pipeline_snapshot = snapshot
        error.pipeline_snapshot_file_path = path
        raise error


@dataclass(frozen=True, init=False)
class ToolBreakpoint(Breakpoint):
    """Stop an Agent run before a tool step: one that calls ``tool_name``, or any step when it is None.

    Args:
        component_name: Must be ``"tool_invoker"``.
        visit_count: Completed matching tool steps before the stop (0 = before the first).
        snapshot_file_path: A directory to write the snapshot file into (stored as str); None writes no file.
        tool_name: The tool whose steps are counted and stopped at; None counts every tool step. Last, as in
            Haystack, so ``ToolBreakpoint("tool_invoker", 0, None, "add")`` binds the same way.

    Raises:
        ConfigurationError: For another component name, a non-str tool_name, or invalid values as for
            :class:`Breakpoint`.
    """

    tool_name: str | None
    """The tool whose steps are stopped at; None stops at any tool step."""

    def __init__(
        self,
        component_name: str = "tool_invoker",
        visit_count: int = 0,
        snapshot_file_path: str | os.PathLike[str] | None = None,
        tool_name: str | None = None,
    ) -> None:
        if component_name != "tool_invoker":
            raise ConfigurationError(
                "If the break_point is a ToolBreakpoint, it must have the component_name 'tool_invoker', "
                f"got {component_name!r}."
            )
        if tool_name is not None and not isinstance(tool_name, str):
            raise ConfigurationError(f"ToolBreakpoint.tool_name must be a str or None, got {tool_name!r}.")
        super().__init__(component_name, visit_count, snapshot_file_path)
        object.__setattr__(self, "tool_name", tool_name)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"component_name", "visit_count", "snapshot_file_path", "tool_name"}``."""
        return {**super().to_dict(), "tool_name": self.tool_name}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolBreakpoint:
        """Rebuild a tool breakpoint from :meth:`to_dict` output.

        Raises:
            ConfigurationError: For unknown keys or invalid values.
        """
        return cls(**_checked_fields(cls, data, ("component_name", "tool_name", "visit_count", "snapshot_file_path")))


@dataclass(frozen=True)
class AgentBreakpoint:
    """A breakpoint of one Agent, named so the snapshot (and its file name) says which agent stopped.

    Raises:
        ConfigurationError: When agent_name is not a str or break_point is not a Breakpoint.
    """

    agent_name: str
    """A free label for a standalone Agent ("" for none); its component name inside a Pipeline."""
    break_point: Breakpoint
    """Where the run stops: a :class:`Breakpoint` or a :class:`ToolBreakpoint`."""

    def __post_init__(self) -> None:
        if not isinstance(self.agent_name, str):
            raise ConfigurationError(f"AgentBreakpoint.agent_name must be a str, got {self.agent_name!r}.")
        if not isinstance(self.break_point, Breakpoint):
            raise ConfigurationError(
                f"AgentBreakpoint.break_point must be a Breakpoint or ToolBreakpoint, got {self.break_point!r}."
            )
        if not isinstance(self.break_point, ToolBreakpoint) and self.break_point.component_name != "chat_generator":
            raise ConfigurationError(
                "If the break_point is a Breakpoint, it must have the component_name 'chat_generator', "
                f"got {self.break_point.component_name!r}."
            )

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"agent_name", "break_point": break_point.to_dict()}``."""
        return {"agent_name": self.agent_name, "break_point": self.break_point.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentBreakpoint:
        """Rebuild from :meth:`to_dict` output.

        Raises:
            ConfigurationError: For missing or unknown keys or invalid values.
        """
        fields = _checked_fields(cls, data, ("agent_name", "break_point"))
        if "agent_name" not in fields or "break_point" not in fields:
            raise ConfigurationError(f"AgentBreakpoint data needs 'agent_name' and 'break_point' keys: {data!r:.200}")
        return cls(fields["agent_name"], Breakpoint.from_dict(fields["break_point"]))


class BreakpointException(Exception):
    """Raised when an Agent run stops at a breakpoint; resume with ``run(messages=[], snapshot=exc.snapshot)``.

    A control-flow signal, not an error: it does not derive from ``HandrailError``.

    Args:
        message: What happened.
        snapshot: The state to resume from.
        snapshot_file_path: The full path of the snapshot file written, or None when none was written.
        break_point: The breakpoint that stopped the run.

    Attributes:
        snapshot: The :class:`~handrail.dataclasses.snapshot.AgentSnapshot` to resume from.
        snapshot_file_path: The full path of the file written (a file, not the directory), or None.
        break_point: The :class:`AgentBreakpoint`, or None.
        component: ``"chat_generator"`` or ``"tool_invoker"`` (the breakpoint's component), or None.
    """

    handrail_signal = True
    """Marks a control-flow signal: a Pipeline lets it through instead of wrapping it in PipelineError."""
    pipeline_snapshot: PipelineSnapshot | None = None
    """The :class:`~handrail.dataclasses.PipelineSnapshot` to resume a Pipeline run from, when the stop happened
    in a Pipeline (at a component's breakpoint, or an Agent's pause inside it); None for a standalone Agent."""
    pipeline_snapshot_file_path: str | None = None
    """The full path of the pipeline snapshot file written, or None."""

    def _in_pipeline(self, paused: PausedRun) -> BreakpointException:
        """This Agent stop, raised by the component ``paused.component_name`` of a Pipeline, as the Pipeline's.

        A copy (same class, same attributes) carrying the pipeline snapshot, which holds the Agent's snapshot;
        the pipeline snapshot file is written next to the Agent's snapshot file when there is one.
        """
        from handrail.dataclasses.pipeline_snapshot import PipelineSnapshot, write_pipeline_snapshot

        inner = self.break_point.break_point if self.break_point is not None else Breakpoint()
        snapshot = PipelineSnapshot._from_paused(paused, AgentBreakpoint(paused.component_name, inner), self.snapshot)
        directory = os.path.dirname(self.snapshot_file_path) if self.snapshot_file_path else None
        clone = copy.copy(self)
        clone.pipeline_snapshot = snapshot
        clone.pipeline_snapshot_file_path = write_pipeline_snapshot(snapshot, directory) if directory else None
        return clone

    def __init__(
        self,
        message: str,
        *,
        snapshot: AgentSnapshot | None = None,
        snapshot_file_path: str | None = None,
        break_point: AgentBreakpoint | None = None,
    ) -> None:
        super().__init__(message)
        self.snapshot = snapshot
        self.snapshot_file_path = snapshot_file_path
        self.break_point = break_point
        self.component: str | None = break_point.break_point.component_name if break_point is not None else None

    @property
    def inputs(self) -> list[ChatMessage] | None:
        """The snapshot's messages (the history at the stop), or None without a snapshot."""
        return self.snapshot.messages if self.snapshot is not None else None

    def with_snapshot(
        self,
        snapshot: AgentSnapshot,
        snapshot_file_path: str | None,
        break_point: AgentBreakpoint | None = None,
    ) -> BreakpointException:
        """Return a copy of this exception (same class) carrying ``snapshot`` and the file path.

        The message gets `` Snapshot: <path>`` appended when a path is given.

        Args:
            snapshot: The snapshot to carry.
            snapshot_file_path: The full path of the file written, or None.
            break_point: The breakpoint; None keeps this exception's (or the snapshot's when it has none).

        Returns:
            The new exception; this one is not changed.
        """
        clone = copy.copy(self)
        message = str(self.args[0]) if self.args else ""
        if snapshot_file_path is not None:
            message = f"{message} Snapshot: {snapshot_file_path}"
        clone.args = (message,)
        clone.snapshot = snapshot
        clone.snapshot_file_path = snapshot_file_path
        clone.break_point = break_point or self.break_point or snapshot.break_point
        clone.component = clone.break_point.break_point.component_name
        return clone


class HITLBreakpointException(BreakpointException):
    """Raised when a tool call needs a person's decision: the run paused and the snapshot holds the pending calls.

    Add :class:`~handrail.dataclasses.decisions.ToolExecutionDecision` entries (by ``tool_call_id``) to
    ``snapshot.tool_execution_decisions`` with ``dataclasses.replace`` and resume with
    ``run(messages=[], snapshot=...)``.

    Args:
        message: What happened, usually :meth:`confirmation_message`.
        tool_name: The tool of the first pending call.
        tool_call_id: The first pending call's id (defaults to the first of ``tool_call_ids``).
        tool_call_ids: Every pending call of the paused step (defaults to ``[tool_call_id]``).
        snapshot: As for :class:`BreakpointException`.
        snapshot_file_path: As for :class:`BreakpointException`.
        break_point: As for :class:`BreakpointException`.

    Examples:
        >>> message = HITLBreakpointException.confirmation_message("transfer")
        >>> exc = HITLBreakpointException(message, tool_name="transfer", tool_call_ids=["c1", "c2"])
        >>> str(exc), exc.tool_call_id
        ("Tool execution for 'transfer' requires user confirmation.", 'c1')
    """

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None = None,
        tool_call_id: str | None = None,
        tool_call_ids: list[str] | None = None,
        snapshot: AgentSnapshot | None = None,
        snapshot_file_path: str | None = None,
        break_point: AgentBreakpoint | None = None,
    ) -> None:
        super().__init__(message, snapshot=snapshot, snapshot_file_path=snapshot_file_path, break_point=break_point)
        ids = list(tool_call_ids or ())
        if tool_call_id is None and ids:
            tool_call_id = ids[0]
        if tool_call_id is not None and not ids:
            ids = [tool_call_id]
        self.tool_name = tool_name
        """The tool of the first pending call."""
        self.tool_call_id = tool_call_id
        """The first pending call's id."""
        self.tool_call_ids = ids
        """Every pending call of the paused step."""

    @staticmethod
    def confirmation_message(tool_name: str | None, snapshot_file_path: str | None = None) -> str:
        """Return ``"Tool execution for '<tool_name>' requires user confirmation."`` (+ `` Snapshot: <path>``)."""
        message = f"Tool execution for '{tool_name}' requires user confirmation."
        return f"{message} Snapshot: {snapshot_file_path}" if snapshot_file_path else message
