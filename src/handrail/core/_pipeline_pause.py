"""Stopping a pipeline run before a component, and going on from there, sans I/O.

The Pipeline lives in ``core``; its breakpoints and snapshots live in ``handrail.dataclasses``, above it. So the
run hands a plain :class:`PausedRun` to the objects it was given, which know what to do with it:

- a breakpoint (``component_name``, ``visit_count``) that matches a component about to run gets
  ``break_point._pause_pipeline(paused)``, which writes the snapshot and raises the breakpoint exception;
- a control-flow signal raised by a component (an Agent's breakpoint or approval pause) gets
  ``signal._in_pipeline(paused)``, which returns the exception to raise instead (carrying the pipeline snapshot);
- a snapshot to resume from gives ``pipeline_snapshot._paused_run()``, the PausedRun it was made from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

__all__ = ["PausedRun", "PipelineBreak", "PipelineResume", "break_hits", "check_break_point"]


@dataclass
class PausedRun:
    """The state of a pipeline run stopped before one component.

    Attributes:
        component_name: The component the run stopped before (it has not run this time).
        component_visits: Completed runs of every component: ``{name: int}``.
        ordered_component_names: Every component of the pipeline, senders before receivers.
        original_input_data: The run data as given to ``run`` (resuming normalizes it again).
        received: What arrived along connections and was not consumed yet: ``{component: {input: value}}``.
        pipeline_outputs: The result so far: ``{component: {output: value}}``.
        include_outputs_from: As given to ``run``.
        component_inputs: The inputs the stopped component would have run with.
        resume_inputs: Inputs given to the stopped component, on top of its own, the first time it runs after
            resuming (an Agent's ``{"snapshot": ..., "messages": []}``).
    """

    component_name: str
    component_visits: dict[str, int]
    ordered_component_names: list[str]
    original_input_data: dict[str, Any]
    received: dict[str, dict[str, Any]]
    pipeline_outputs: dict[str, dict[str, Any]]
    include_outputs_from: set[str]
    component_inputs: dict[str, Any] = field(default_factory=dict)
    resume_inputs: dict[str, Any] = field(default_factory=dict)


class PipelineBreak(Protocol):
    """What ``Pipeline.run(break_point=...)`` needs of a breakpoint."""

    component_name: str
    visit_count: int

    def _pause_pipeline(self, paused: PausedRun) -> NoReturn: ...


class PipelineResume(Protocol):
    """What ``Pipeline.run(pipeline_snapshot=...)`` needs of a snapshot."""

    def _paused_run(self) -> PausedRun: ...


def check_break_point(break_point: Any, components: Mapping[str, Any]) -> str | None:
    """Return the component a breakpoint stops at, checking it is one of the pipeline's.

    An AgentBreakpoint (``agent_name``) names an Agent component; its inner breakpoint is handed to that
    component's run.

    Raises:
        ComponentError: When the breakpoint names no component of the pipeline (a ValueError).
        ConfigurationTypeError: When it is not a breakpoint.
        ConfigurationError: When its ``snapshot_file_path`` (an AgentBreakpoint's inner one) is an existing file
            or lies inside one: refused before anything runs, not when the snapshot is written.
    """
    from handrail.core._files import check_directory_path
    from handrail.errors import ComponentError, ConfigurationTypeError

    if break_point is None:
        return None
    name = getattr(break_point, "agent_name", None)
    if name is None:
        name = getattr(break_point, "component_name", None)
        if not callable(getattr(break_point, "_pause_pipeline", None)):
            raise ConfigurationTypeError(
                f"break_point must be a Breakpoint or an AgentBreakpoint, got {type(break_point).__name__}."
            )
    if name not in components:
        known = ", ".join(repr(n) for n in components) or "(none)"
        raise ComponentError(
            f"break_point {break_point!r} is not a registered component in the pipeline. Components: {known}."
        )
    inner = getattr(break_point, "break_point", break_point)
    directory = getattr(inner, "snapshot_file_path", None)
    if directory:
        check_directory_path(directory, f"The break_point's {type(inner).__name__} snapshot_file_path")
    return str(name)


def break_hits(break_point: Any, name: str, visits: int) -> bool:
    """Whether a plain breakpoint stops the run before ``name``'s run after ``visits`` completed ones."""
    if break_point is None or getattr(break_point, "agent_name", None) is not None:
        return False
    return bool(break_point.component_name == name and break_point.visit_count == visits)
