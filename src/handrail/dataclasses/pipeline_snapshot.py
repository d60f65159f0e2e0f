"""Pipeline snapshots: the state of a Pipeline run stopped at a breakpoint (or by an Agent's pause).

``Pipeline.run(data, break_point=Breakpoint("llm"))`` stops before the component ``llm`` runs and raises a
:class:`~handrail.dataclasses.breakpoints.BreakpointException` whose ``pipeline_snapshot`` is a
:class:`PipelineSnapshot`; with ``snapshot_file_path`` set, the snapshot is also written there as a JSON file
(atomically, mode 0o600) and ``pipeline_snapshot_file_path`` names it. ``Pipeline.run({}, pipeline_snapshot=...)``
goes on from it; :func:`load_pipeline_snapshot` reads a file back. Values keep their types through typed JSON
(ChatMessage, dataclasses, tuples, datetimes...); classes named in a file are imported only from handrail and the
modules the reader allows.

Examples:
    >>> from typing import Any
    >>> from handrail import Pipeline, component
    >>> from handrail.dataclasses import Breakpoint, BreakpointException
    >>> @component
    ... class Add:
    ...     @component.output_types(value=int)
    ...     def run(self, value: int) -> dict[str, Any]:
    ...         return {"value": value + 1}
    >>> pipeline = Pipeline()
    >>> pipeline.add_component("first", Add())
    >>> pipeline.add_component("second", Add())
    >>> _ = pipeline.connect("first", "second")
    >>> try:
    ...     pipeline.run({"first": {"value": 1}}, break_point=Breakpoint("second"))
    ... except BreakpointException as stop:
    ...     snapshot = stop.pipeline_snapshot
    >>> snapshot.pipeline_state.inputs, snapshot.pipeline_state.component_visits
    ({'second': {'value': 2}}, {'first': 1, 'second': 0})
    >>> pipeline.run({}, pipeline_snapshot=PipelineSnapshot.from_dict(snapshot.to_dict()))
    {'second': {'value': 3}}
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from handrail.core._pipeline_pause import PausedRun
from handrail.core._typed_json import encode_value
from handrail.core._typed_json_decode import decode_value
from handrail.core.serialization import restricted_imports
from handrail.dataclasses._ledger import utc_now
from handrail.dataclasses.breakpoints import AgentBreakpoint, Breakpoint
from handrail.errors import SnapshotError

if TYPE_CHECKING:
    from handrail.dataclasses.snapshot import AgentSnapshot

__all__ = ["PIPELINE_SNAPSHOT_SCHEMA_VERSION", "PipelineSnapshot", "PipelineState", "load_pipeline_snapshot"]

PIPELINE_SNAPSHOT_SCHEMA_VERSION = 1
"""The version of the pipeline snapshot format."""
_KEYS = (
    "schema_version",
    "original_input_data",
    "ordered_component_names",
    "pipeline_state",
    "break_point",
    "agent_snapshot",
    "timestamp",
    "include_outputs_from",
)


@dataclass
class PipelineState:
    """Where a pipeline run stood when it stopped."""

    inputs: dict[str, dict[str, Any]]
    """Inputs that arrived along connections and were not consumed yet: ``{component: {input: value}}`` (the
    stopped component's included)."""
    component_visits: dict[str, int]
    """Completed runs of every component: ``{name: int}``."""
    pipeline_outputs: dict[str, dict[str, Any]]
    """The result so far: ``{component: {output: value}}``."""


@dataclass
class PipelineSnapshot:
    """A pipeline run stopped before one component: enough to go on with ``Pipeline.run(..., pipeline_snapshot=)``.

    Raises:
        SnapshotError: When the visits do not name exactly the ordered components.
    """

    original_input_data: dict[str, Any]
    """The run data as given to ``run``."""
    ordered_component_names: list[str]
    """Every component of the pipeline, senders before receivers."""
    pipeline_state: PipelineState
    """Visits, undelivered inputs and outputs so far."""
    break_point: Breakpoint | AgentBreakpoint
    """Where the run stopped: a Breakpoint naming the component, or an AgentBreakpoint naming the Agent."""
    agent_snapshot: AgentSnapshot | None = None
    """The paused Agent's own snapshot, when an Agent stopped the run; add decisions to it before resuming."""
    timestamp: datetime = field(default_factory=utc_now)
    """When the run stopped (timezone-aware UTC)."""
    include_outputs_from: set[str] = field(default_factory=set)
    """As given to ``run``."""

    def __post_init__(self) -> None:
        if set(self.pipeline_state.component_visits) != set(self.ordered_component_names):
            raise SnapshotError(
                "Invalid pipeline snapshot: the component visits name "
                f"{sorted(self.pipeline_state.component_visits)}, the ordered components "
                f"{sorted(self.ordered_component_names)}; they must be the same."
            )

    @property
    def component_name(self) -> str:
        """The component the run stopped before (the Agent's name for an AgentBreakpoint)."""
        if isinstance(self.break_point, AgentBreakpoint):
            return self.break_point.agent_name
        return self.break_point.component_name

    @classmethod
    def _from_paused(
        cls, paused: PausedRun, break_point: Breakpoint | AgentBreakpoint, agent_snapshot: AgentSnapshot | None = None
    ) -> PipelineSnapshot:
        return cls(
            original_input_data=paused.original_input_data,
            ordered_component_names=paused.ordered_component_names,
            pipeline_state=PipelineState(paused.received, paused.component_visits, paused.pipeline_outputs),
            break_point=break_point,
            agent_snapshot=agent_snapshot,
            include_outputs_from=set(paused.include_outputs_from),
        )

    def _paused_run(self) -> PausedRun:
        """The run state ``Pipeline.run`` goes on from (an Agent's snapshot becomes its next run's input)."""
        resume: dict[str, Any] = {}
        if self.agent_snapshot is not None:
            resume = {"messages": [], "snapshot": self.agent_snapshot, "break_point": None}
        return PausedRun(
            component_name=self.component_name,
            component_visits=dict(self.pipeline_state.component_visits),
            ordered_component_names=list(self.ordered_component_names),
            original_input_data=dict(self.original_input_data),
            received={k: dict(v) for k, v in self.pipeline_state.inputs.items()},
            pipeline_outputs={k: dict(v) for k, v in self.pipeline_state.pipeline_outputs.items()},
            include_outputs_from=set(self.include_outputs_from),
            resume_inputs=resume,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the snapshot as JSON data; values are typed JSON (they come back with their types).

        Raises:
            SerializationError: Naming the value that cannot be written (``pipeline_state.inputs['llm']``...).
        """
        state = self.pipeline_state
        return {
            "schema_version": PIPELINE_SNAPSHOT_SCHEMA_VERSION,
            "original_input_data": encode_value(self.original_input_data, "original_input_data"),
            "ordered_component_names": list(self.ordered_component_names),
            "pipeline_state": {
                "inputs": encode_value(state.inputs, "pipeline_state.inputs"),
                "component_visits": dict(state.component_visits),
                "pipeline_outputs": encode_value(state.pipeline_outputs, "pipeline_state.pipeline_outputs"),
            },
            "break_point": self.break_point.to_dict(),
            "agent_snapshot": self.agent_snapshot.to_dict() if self.agent_snapshot is not None else None,
            "timestamp": self.timestamp.isoformat(),
            "include_outputs_from": sorted(self.include_outputs_from),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, allowed_modules: Iterable[str] = ()) -> PipelineSnapshot:
        """Rebuild a snapshot from :meth:`to_dict` output (``data`` is not modified).

        Args:
            data: The snapshot dict.
            allowed_modules: Module prefixes whose classes values may name, besides handrail's.

        Raises:
            SnapshotError: For a missing or unknown key, a wrong type, a class outside the allowlist, or an
                unknown schema version (a ValueError).
        """
        from handrail.dataclasses.snapshot import AgentSnapshot

        if not isinstance(data, dict):
            raise SnapshotError(f"A pipeline snapshot must be a dict, got {type(data).__name__}.")
        missing, unknown = sorted(set(_KEYS) - set(data)), sorted(set(data) - set(_KEYS))
        if missing or unknown:
            raise SnapshotError(f"Pipeline snapshot keys: missing {missing}, unknown {unknown}.")
        if data["schema_version"] != PIPELINE_SNAPSHOT_SCHEMA_VERSION:
            raise SnapshotError(
                f"Pipeline snapshot schema_version {data['schema_version']!r} is not known (this handrail reads "
                f"{PIPELINE_SNAPSHOT_SCHEMA_VERSION})."
            )
        _check_shapes(data)
        allowed = tuple(allowed_modules)
        try:
            with restricted_imports(allowed):
                state = data["pipeline_state"]
                point = data["break_point"]
                agent = data["agent_snapshot"]
                return cls(
                    original_input_data=decode_value(data["original_input_data"], "original_input_data"),
                    ordered_component_names=list(data["ordered_component_names"]),
                    pipeline_state=PipelineState(
                        decode_value(state["inputs"], "pipeline_state.inputs"),
                        dict(state["component_visits"]),
                        decode_value(state["pipeline_outputs"], "pipeline_state.pipeline_outputs"),
                    ),
                    break_point=AgentBreakpoint.from_dict(point)
                    if "agent_name" in point
                    else Breakpoint.from_dict(point),
                    agent_snapshot=None if agent is None else AgentSnapshot.from_dict(agent, allowed_modules=allowed),
                    timestamp=datetime.fromisoformat(data["timestamp"]),
                    include_outputs_from=set(data["include_outputs_from"]),
                )
        except SnapshotError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SnapshotError(f"Invalid pipeline snapshot: {type(exc).__name__}: {exc}") from exc


def _check_shapes(data: dict[str, Any]) -> None:
    """Refuse, naming the field, the values a hand edit most often breaks (before anything is decoded).

    Raises:
        SnapshotError: ``break_point`` not a dict; ``pipeline_state`` not a dict with ``component_visits`` of
            ``{name: count >= 0}``; ``ordered_component_names`` not a list of str.
    """
    if not isinstance(data["break_point"], dict):
        raise SnapshotError(f"Pipeline snapshot field 'break_point' must be a dict, got {data['break_point']!r:.80}.")
    names = data["ordered_component_names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SnapshotError("Pipeline snapshot field 'ordered_component_names' must be a list of component names.")
    state = data["pipeline_state"]
    if not isinstance(state, dict):
        raise SnapshotError(f"Pipeline snapshot field 'pipeline_state' must be a dict, got {type(state).__name__}.")
    visits = state.get("component_visits")
    if not isinstance(visits, dict):
        raise SnapshotError("Pipeline snapshot field 'pipeline_state.component_visits' must be a dict.")
    for name, count in visits.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise SnapshotError(
                f"Pipeline snapshot field 'pipeline_state.component_visits.{name}' must be a count (an integer "
                f"of 0 or more), got {count!r:.80}."
            )


def write_pipeline_snapshot(snapshot: PipelineSnapshot, directory: str) -> str:
    """Write ``snapshot`` into ``directory`` (created, mode 0o700) as a new JSON file, atomically, mode 0o600.

    Returns:
        The full path: ``<directory>/[<agent>_]<component>_<visits>_<YYYY_MM_DD_HH_MM_SS>_<8 hex>.json``.

    Raises:
        SerializationError: Naming a value that cannot be written; nothing is written.
        ConfigurationError: When ``directory`` is an existing file or lies inside one.
        OSError: When the file cannot be written.
    """
    from handrail.core._files import atomic_write, check_directory_path
    from handrail.dataclasses.snapshot import _UNSAFE

    data = json.dumps(snapshot.to_dict(), ensure_ascii=False, indent=2).encode("utf-8")
    point = snapshot.break_point
    if isinstance(point, AgentBreakpoint):
        prefix, component = f"{_UNSAFE.sub('_', point.agent_name)}_", point.break_point.component_name
    else:
        prefix, component = "", _UNSAFE.sub("_", point.component_name)
    visits = snapshot.pipeline_state.component_visits.get(snapshot.component_name, 0)
    stamp = snapshot.timestamp.strftime("%Y_%m_%d_%H_%M_%S")
    location = os.path.abspath(
        os.path.join(directory, f"{prefix}{component}_{visits}_{stamp}_{uuid.uuid4().hex[:8]}.json")
    )
    check_directory_path(directory, "The breakpoint's snapshot_file_path")
    os.makedirs(os.path.dirname(location), mode=0o700, exist_ok=True)
    atomic_write(location, data)
    return location


def load_pipeline_snapshot(
    file_path: str | os.PathLike[str], *, allowed_modules: Iterable[str] = ()
) -> PipelineSnapshot:
    """Read a pipeline snapshot file written at a breakpoint.

    Args:
        file_path: The file (``BreakpointException.pipeline_snapshot_file_path``).
        allowed_modules: Module prefixes whose classes values may name, besides handrail's.

    Raises:
        FileNotFoundError: ``"File not found: <path>"``.
        SnapshotError: ``"Invalid pipeline snapshot from <path>: ..."`` for a file that is not valid JSON or not
            a pipeline snapshot (a ValueError).
    """
    path = os.fspath(file_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"File not found: {path}")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return PipelineSnapshot.from_dict(data, allowed_modules=allowed_modules)
    except (ValueError, UnicodeDecodeError) as exc:  # SnapshotError and json's errors are ValueErrors
        raise SnapshotError(f"Invalid pipeline snapshot from {path}: {exc}") from exc
