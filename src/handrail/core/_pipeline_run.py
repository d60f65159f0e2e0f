"""Running a pipeline, sans I/O: checking the run data, then handing out the components that are ready.

:class:`RunState` decides *what* runs (the rules are listed in the ``Pipeline`` docstring); the drivers decide
*how*. The sync driver (``Pipeline.run``) asks for the ready components, runs them one after the other, and asks
again. The async driver (:mod:`handrail.core._pipeline_async`) is event-driven: every ready component starts as
an asyncio task, and as each one finishes its outputs are delivered and whatever became ready starts, while the
others are still running. Both share this one scheduler, so their semantics cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from handrail.core._pipeline_graph import Graph, describe_type
from handrail.core._pipeline_pause import PausedRun
from handrail.core.component import InputSocket, input_sockets
from handrail.errors import ConfigurationError, ConfigurationTypeError, PipelineError, PipelineMaxComponentRuns

__all__ = [
    "RunState",
    "Task",
    "call_sync",
    "check_include",
    "failure",
    "normalize_data",
    "topological_order",
]

_BLOCKED, _DEFERRED, _READY = 0, 1, 2


@dataclass(frozen=True)
class Task:
    """One run of one component, handed out by :meth:`RunState.next_wave`.

    Attributes:
        name: The component's name in the pipeline.
        label: ``"'name' (ClassName)"``, for messages.
        component: The component instance.
        inputs: The keyword arguments for its ``run`` (or ``run_async``).
        received: The part of ``inputs`` that arrived along connections (given back if the run is paused).
    """

    name: str
    label: str
    component: Any
    inputs: dict[str, Any]
    received: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Node:
    """What the scheduler knows about one component during one run."""

    sockets: dict[str, InputSocket]
    connected: set[str]
    given: dict[str, Any]
    received: dict[str, Any] = field(default_factory=dict)
    fresh: bool = False
    runs: int = 0

    def status(self) -> int:
        if not self.fresh:
            return _BLOCKED
        present = self.given.keys() | self.received.keys()
        if any(s.is_mandatory and n not in present for n, s in self.sockets.items()):
            return _BLOCKED
        return _DEFERRED if self.connected - present else _READY


def normalize_data(graph: Graph, data: Any) -> dict[str, dict[str, Any]]:
    """Turn run data (nested, flat or both) into ``{component: {input: value}}`` and check it.

    A key naming a component whose value is a mapping is that component's inputs; any other key is a flat
    input, given to every component with an unconnected input socket of that name. Nested values win over
    flat ones. ``data`` is not modified.

    Args:
        graph: The pipeline's graph.
        data: What the caller passed to ``run``.

    Returns:
        ``{component: {input: value}}`` with an entry for every component (empty when it got nothing).

    Raises:
        ConfigurationTypeError: When ``data`` is not a mapping, a key is not a string, or the value for a
            component (that is no unconnected input's name too) is not a dict of its inputs.
        ConfigurationError: For an unknown input socket, a flat key no unconnected input has, or a value for an
            input that is connected (it receives from its sender).
    """
    if not isinstance(data, Mapping):
        raise ConfigurationTypeError(
            f"Pipeline run data must be a dict ({{component: {{input: value}}}} or {{input: value}}), "
            f"got {type(data).__name__}."
        )
    for key in data:
        if not isinstance(key, str):
            raise ConfigurationTypeError(
                f"Pipeline run data keys must be strings (a component or an input name), got the key {key!r:.50} "
                f"({type(key).__name__})."
            )
    result: dict[str, dict[str, Any]] = {name: {} for name in graph.components}
    for key, value in data.items():
        if key in graph.components and not isinstance(value, Mapping) and not _flat_targets(graph, key):
            raise ConfigurationTypeError(_not_a_dict(graph, key, value))
        if key not in graph.components or not isinstance(value, Mapping):
            _give_flat(graph, result, key, value)
    for name, values in data.items():
        if name in graph.components and isinstance(values, Mapping):
            _check_nested(graph, name, values)
            result[name].update(values)
    _check_mandatory(graph, result)
    return result


def _flat_targets(graph: Graph, key: str) -> list[str]:
    """The components with an unconnected input socket named ``key``."""
    return [
        name
        for name, instance in graph.components.items()
        if key in input_sockets(instance) and key not in graph.connected_inputs(name)
    ]


def _not_a_dict(graph: Graph, name: str, value: Any) -> str:
    sockets = list(input_sockets(graph.components[name]))
    example = sockets[0] if sockets else "input"
    return (
        f"Run data for component {graph.label(name)} must be a dict of its inputs, e.g. "
        f"{{'{name}': {{'{example}': value}}}}, got {type(value).__name__}. "
        f"Its inputs: {', '.join(repr(s) for s in sockets) or '(none)'}."
    )


def _give_flat(graph: Graph, result: dict[str, dict[str, Any]], key: str, value: Any) -> None:
    targets = _flat_targets(graph, key)
    if not targets:
        free = sorted(
            {s for n, c in graph.components.items() for s in input_sockets(c) if s not in graph.connected_inputs(n)}
        )
        raise ConfigurationError(
            f"Run data key '{key}' is neither a component of the pipeline nor an unconnected input of any "
            f"component. Unconnected inputs: {', '.join(repr(s) for s in free) or '(none)'}; components: "
            f"{', '.join(repr(n) for n in graph.components) or '(none)'}."
        )
    for name in targets:
        result[name][key] = value


def _check_nested(graph: Graph, name: str, values: Mapping[Any, Any]) -> None:
    sockets = input_sockets(graph.components[name])
    for socket in values:
        if socket not in sockets:
            listed = ", ".join(repr(s) for s in sockets) or "(none)"
            raise ConfigurationError(
                f"Run data for {graph.label(name)} names input '{socket}', which it does not have. "
                f"Its inputs: {listed}."
            )
        sender = graph.sender_of(name, socket)
        if sender is not None:
            raise ConfigurationError(
                f"Run data gives a value to '{name}.{socket}', but that input is connected: it receives from "
                f"'{sender.sender}.{sender.sender_socket}'."
            )


def _check_mandatory(graph: Graph, given: dict[str, dict[str, Any]]) -> None:
    missing = [
        f"'{name}.{socket.name}' ({describe_type(socket.type)}) of {graph.label(name)}"
        for name, instance in graph.components.items()
        for socket in input_sockets(instance).values()
        if socket.is_mandatory and socket.name not in given[name] and graph.sender_of(name, socket.name) is None
    ]
    if missing:
        raise ConfigurationError(
            f"Missing mandatory input {', '.join(missing)}: it is not connected, so pass it in the run data, "
            f"e.g. run({{'<component>': {{'<input>': value}}}}) or run({{'<input>': value}})."
        )


def check_include(graph: Graph, include_outputs_from: Iterable[str] | None) -> set[str]:
    """Return ``include_outputs_from`` as a set, checking every name is a component.

    Raises:
        ConfigurationTypeError: When it is neither None, a string nor an iterable of strings.
        ConfigurationError: For a name that is not a component of the pipeline.
    """
    if include_outputs_from is None:
        return set()
    if isinstance(include_outputs_from, str):
        include_outputs_from = [include_outputs_from]
    if not isinstance(include_outputs_from, Iterable):
        raise ConfigurationTypeError(
            f"include_outputs_from must be a component name or an iterable of component names (list, set, "
            f"tuple), got {type(include_outputs_from).__name__}."
        )
    listed = list(include_outputs_from)
    for item in listed:
        if not isinstance(item, str):
            raise ConfigurationTypeError(
                f"include_outputs_from must hold component names (strings), got {item!r:.50} ({type(item).__name__})."
            )
    names = set(listed)
    unknown = sorted(names - set(graph.components))
    if unknown:
        raise ConfigurationError(
            f"include_outputs_from names {unknown}, which are not components of the pipeline. "
            f"Components: {', '.join(repr(n) for n in graph.components) or '(none)'}."
        )
    return names


def topological_order(graph: Graph) -> list[str]:
    """Order the components so that senders come before receivers.

    A cycle is entered at the member with the fewest senders not yet placed (the first added among equals).

    Returns:
        Every component name once.
    """
    pending = {
        name: {c.sender for c in graph.connections if c.receiver == name and c.sender != name}
        for name in graph.components
    }
    order: list[str] = []
    while pending:
        free = [n for n, senders in pending.items() if not senders]
        chosen = free[0] if free else min(pending, key=lambda n: len(pending[n]))
        order.append(chosen)
        del pending[chosen]
        for senders in pending.values():
            senders.discard(chosen)
    return order


class RunState:
    """The scheduler of one pipeline run (see the module docstring for the rules).

    Args:
        graph: The pipeline's graph (not changed).
        data: The checked run data, from :func:`normalize_data`.
        include_outputs_from: Components whose every output goes into the result.
        max_runs_per_component: How often one component may run in this run.
    """

    def __init__(
        self, graph: Graph, data: dict[str, dict[str, Any]], include_outputs_from: set[str], max_runs_per_component: int
    ) -> None:
        self._graph = graph
        self._include = include_outputs_from
        self._max_runs = max_runs_per_component
        self._order = topological_order(graph)
        self._nodes = {
            name: _Node(
                sockets=input_sockets(instance),
                connected=graph.connected_inputs(name),
                given=dict(data.get(name, {})),
            )
            for name, instance in graph.components.items()
        }
        for node in self._nodes.values():
            node.fresh = bool(node.given) or not node.connected
        self._running: set[str] = set()
        self._result: dict[str, dict[str, Any]] = {}
        self._extra: dict[str, dict[str, Any]] = {}
        """Inputs added to one component's next run only (an Agent resumed from its snapshot)."""

    def restore(self, paused: PausedRun) -> None:
        """Go on from a paused run: visits, undelivered inputs, the result so far, the paused one's extra inputs.

        A component is fresh again when something waits for it, or when it has not run yet and was fresh at the
        start.
        """
        for name, node in self._nodes.items():
            node.runs = paused.component_visits.get(name, 0)
            node.received = dict(paused.received.get(name, {}))
            node.fresh = bool(node.received) or (node.runs == 0 and node.fresh)
        self._result = {name: dict(outputs) for name, outputs in paused.pipeline_outputs.items()}
        if paused.resume_inputs:
            self._extra[paused.component_name] = dict(paused.resume_inputs)

    def visits(self, name: str) -> int:
        """How often ``name`` was handed out in this run (including a run in progress)."""
        return self._nodes[name].runs

    def untake(self, task: Task) -> None:
        """Give back a task that was handed out but did not run (the run pauses before it)."""
        node = self._nodes[task.name]
        node.received = {**task.received, **node.received}
        node.fresh = True
        node.runs -= 1
        self._running.discard(task.name)

    def pause(self, task: Task, original_input_data: Mapping[str, Any]) -> PausedRun:
        """The state to resume from, the run stopped before ``task`` (call :meth:`untake` on it first)."""
        return PausedRun(
            component_name=task.name,
            component_visits={name: node.runs for name, node in self._nodes.items()},
            ordered_component_names=list(self._order),
            original_input_data=dict(original_input_data),
            received={name: dict(node.received) for name, node in self._nodes.items() if node.received},
            pipeline_outputs={name: dict(outputs) for name, outputs in self._result.items()},
            include_outputs_from=set(self._include),
            component_inputs=dict(task.inputs),
        )

    @property
    def result(self) -> dict[str, dict[str, Any]]:
        """``{component: {output: value}}``: unconsumed outputs, plus the last run's outputs of the included."""
        return self._result

    def next_wave(self, limit: int | None = None) -> list[Task]:
        """Hand out the components to start now, with their inputs, and count them as running.

        Every ready component that is not running already; when none is ready and nothing is running (nothing
        more can arrive), the first deferred one. An empty list while tasks are running means: wait for one to
        finish (:meth:`complete`), then ask again; an empty list with nothing running means the run is over.
        With ``limit``, at most that many components run at once: the others stay ready for a later call.

        Raises:
            PipelineMaxComponentRuns: When a component to start has already run ``max_runs_per_component`` times.
        """
        statuses = {name: self._nodes[name].status() for name in self._order if name not in self._running}
        chosen = [name for name, status in statuses.items() if status == _READY]
        if not chosen and not self._running:
            chosen = [name for name, status in statuses.items() if status == _DEFERRED][:1]
        if limit is not None:
            chosen = chosen[: max(0, limit - len(self._running))]
        return [self._take(name) for name in chosen]

    def _take(self, name: str) -> Task:
        node = self._nodes[name]
        label = self._graph.label(name)
        if node.runs >= self._max_runs:
            raise PipelineMaxComponentRuns(
                f"Component {label} would run more than max_runs_per_component={self._max_runs} times: the "
                f"pipeline loops without reaching an exit. Fix the loop's exit condition or raise the limit.",
                component_name=name,
            )
        inputs = {n: s.default for n, s in node.sockets.items() if not s.is_mandatory}
        inputs.update(node.given)
        inputs.update(node.received)
        inputs.update(self._extra.pop(name, {}))
        received, node.received = node.received, {}
        node.fresh = False
        node.runs += 1
        self._running.add(name)
        return Task(name, label, self._graph.components[name], inputs, received)

    def complete(self, task: Task, outputs: Any) -> None:
        """Record what one run returned: send it along the connections, keep what nobody consumes.

        Raises:
            PipelineError: When the component returned something other than a dict of outputs.
        """
        self._running.discard(task.name)
        if not isinstance(outputs, Mapping):
            raise PipelineError(
                f"Component {task.label} returned a {type(outputs).__name__}; run() must return a dict "
                f"{{output socket: value}}.",
                component_name=task.name,
            )
        included = task.name in self._include
        for socket, value in outputs.items():
            delivered = False
            for connection in self._graph.receivers(task.name, socket):
                receiver = self._nodes[connection.receiver]
                receiver.received[connection.receiver_socket] = value
                receiver.fresh = True
                delivered = True
            if not delivered and not included:
                self._result.setdefault(task.name, {})[socket] = value
        if included:  # exactly the last run's outputs: nothing of an earlier run is left over
            self._result[task.name] = dict(outputs)

    def stuck(self) -> Iterator[str]:
        """After the run: describe each component left waiting for a mandatory input that never arrived.

        Reported: a component holding inputs that arrived along connections but that it never ran with (the
        other mandatory ones never came), and one that never ran because a missing mandatory input comes only
        from itself; when nothing ran at all, every component missing a mandatory input. A router's untaken
        branch whose receiver got nothing along a connection is normal and not reported.

        Yields:
            One message per such component, naming it and the inputs that never arrived.
        """
        nothing_ran = not any(node.runs for node in self._nodes.values())
        for name in self._order:
            node = self._nodes[name]
            present = node.given.keys() | node.received.keys()
            missing = [n for n, s in node.sockets.items() if s.is_mandatory and n not in present]
            if not missing:
                continue
            senders = {n: self._graph.sender_of(name, n) for n in missing}
            self_fed = any(c is not None and c.sender == name for c in senders.values())
            if not (node.received or (node.runs == 0 and (self_fed or nothing_ran))):
                continue
            got = sorted(node.received) or sorted(node.given)
            waits = ", ".join(
                f"'{name}.{n}'" + (f" (from '{c.sender}.{c.sender_socket}')" if c is not None else "")
                for n, c in senders.items()
            )
            hint = (
                f" An input fed by '{name}' itself cannot arrive before '{name}' has run."
                if self_fed
                else " A router that sends to only some of them, or a loop without an entry, leaves it waiting."
            )
            yield (
                f"Component {self._graph.label(name)} {'did not run again' if node.runs else 'never ran'}: it "
                f"received {', '.join(repr(g) for g in got) or 'nothing'}, but its mandatory input(s) {waits} "
                f"never arrived.{hint}"
            )


def failure(task: Task, exc: Exception) -> PipelineError:
    """The PipelineError for a component that raised: it names the component."""
    return PipelineError(
        f"Component {task.label} failed: {type(exc).__name__}: {exc}",
        component_name=task.name,
    )


def call_sync(task: Task) -> Any:
    """Run one task with the component's ``run``.

    Raises:
        PipelineError: When the component raised; the original exception is chained.
    """
    try:
        return task.component.run(**task.inputs)
    except Exception as exc:
        if getattr(exc, "handrail_signal", False):  # a breakpoint or approval pause: not a failure
            raise
        raise failure(task, exc) from exc
