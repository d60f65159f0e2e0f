"""``Pipeline``: components connected socket to socket, run as a graph (loops and branches included).

>>> from typing import Any
>>> from handrail.core.component import component
>>> @component
... class Double:
...     @component.output_types(value=int)
...     def run(self, value: int) -> dict[str, Any]:
...         return {"value": value * 2}
>>> pipeline = Pipeline()
>>> pipeline.add_component("first", Double())
>>> pipeline.add_component("second", Double())
>>> pipeline.connect("first", "second")
Pipeline(components=['first', 'second'], connections=["'first.value' -> 'second.value'"])
>>> pipeline.run({"first": {"value": 3}})
{'second': {'value': 12}}
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from handrail.core._pipeline_async import drive_async
from handrail.core._pipeline_graph import Graph
from handrail.core._pipeline_io import graph_to_dict, mermaid, read_spec, yaml_dump, yaml_load
from handrail.core._pipeline_pause import PausedRun, break_hits, check_break_point
from handrail.core._pipeline_run import RunState, Task, call_sync, check_include, normalize_data
from handrail.core._threads import FreshLockOnCopy, to_thread
from handrail.core.component import is_component
from handrail.errors import ComponentError, ConfigurationError, ConfigurationTypeError, PipelineError

logger = logging.getLogger("handrail.core")
"""Runtime conditions of pipeline runs (a component left waiting), at WARNING, as Haystack logs them."""


def report_stuck(state: RunState) -> None:
    """Log, at WARNING on ``handrail.core``, each component the run left waiting for a mandatory input."""
    for message in state.stuck():
        logger.warning(message)


__all__ = ["Pipeline", "pipeline_of"]

_OWNER = "__handrail_pipeline__"


class Pipeline(FreshLockOnCopy):
    """A graph of components: outputs flow along connections into inputs until nothing is left to run.

    ``run`` and ``run_async`` share one scheduler. ``run`` runs the ready components one after the other, then
    asks again; ``run_async`` is event-driven: each component starts as soon as it is ready, while others are
    still running, so independent branches overlap from start to end. The rules:

    1. At the start a component is *fresh* when it was given run data or has no connected input at all.
    2. A component is *ready* when it is fresh, every mandatory input is present and every connected input has
       arrived; it is *deferred* when only optional connected inputs are missing (a loop's feedback, a router's
       untaken branch); otherwise it waits.
    3. Every ready component that is not running starts (senders before receivers); when none is ready and
       none is running, the first deferred one. A started component gets its inputs: what arrived along
       connections is consumed, the run data is kept (a component in a loop sees it again), a missing optional
       input gets its default.
    4. A finished run sends each output along its connections (the receivers become fresh). Outputs that no
       connection consumes are the result, the latest value of a socket winning; a component in
       ``include_outputs_from`` reports exactly its last run's outputs instead. A router's untaken branch
       never fires: nothing new reaches it.
    5. The run ends when no component is ready, deferred or running. Loops are allowed (a component may feed
       itself); a component about to run more than ``max_runs_per_component`` times raises
       :class:`~handrail.errors.PipelineMaxComponentRuns`. A component left waiting for a mandatory input that
       never arrived, although it received others along connections (or feeds that input itself), is reported
       with a WARNING on the ``handrail.core`` logger at the end of the run.

    Args:
        metadata: Free-form data kept with the pipeline (and in its dict form).
        max_runs_per_component: How often one component may run within one run; a loop that goes beyond it
            raises :class:`~handrail.errors.PipelineMaxComponentRuns`.
        connection_type_validation: Haystack's switch; only ``True`` is accepted, as handrail always checks
            that connected sockets' types match.

    Raises:
        ConfigurationTypeError: When ``metadata`` is not a dict or ``max_runs_per_component`` not an integer.
        ConfigurationError: When ``max_runs_per_component`` is below 1, or ``connection_type_validation`` is not
            ``True``.
    """

    def __init__(
        self,
        metadata: dict[str, Any] | None = None,
        max_runs_per_component: int = 100,
        connection_type_validation: bool = True,
    ) -> None:
        if connection_type_validation is not True:
            raise ConfigurationError(
                f"connection_type_validation={connection_type_validation!r} is not supported: handrail always checks "
                "the types of connections (Haystack's default, True)."
            )
        if metadata is not None and not isinstance(metadata, dict):
            raise ConfigurationTypeError(f"Pipeline metadata must be a dict or None, got {type(metadata).__name__}.")
        if not isinstance(max_runs_per_component, int) or isinstance(max_runs_per_component, bool):
            raise ConfigurationTypeError(
                f"max_runs_per_component must be an integer, got {type(max_runs_per_component).__name__}."
            )
        if max_runs_per_component < 1:
            raise ConfigurationError(f"max_runs_per_component must be at least 1, got {max_runs_per_component}.")
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.max_runs_per_component = max_runs_per_component
        self._graph = Graph()
        self._warmed = False
        self._warm_lock = threading.Lock()

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)  # a copy gets its own warm-up lock
        for instance in self._graph.components.values():
            vars(instance)[_OWNER] = weakref.ref(self)

    def __repr__(self) -> str:
        connections = [str(c) for c in self._graph.connections]
        return f"Pipeline(components={list(self._graph.components)!r}, connections={connections!r})"

    # ---- building ------------------------------------------------------------------------------------------

    def add_component(self, name: str, instance: Any) -> None:
        """Add a component under a name.

        Args:
            name: A non-empty name without ``"."``, unique in this pipeline.
            instance: An instance of a ``@component`` class, in no other pipeline.

        Raises:
            ConfigurationTypeError: When ``name`` is not a string.
            ComponentError: When the name is empty, contains ``"."`` or is taken, when ``instance`` is not a
                component instance, or when it already belongs to a pipeline.
        """
        if not isinstance(name, str):
            raise ConfigurationTypeError(f"A component name must be a string, got {type(name).__name__}.")
        if not name or "." in name:
            raise ComponentError(f"Invalid component name {name!r}: it must be non-empty and contain no '.'.")
        if name in self._graph.components:
            raise ComponentError(f"A component named '{name}' already exists in this pipeline; choose another name.")
        if isinstance(instance, type) or not is_component(instance):
            what = f"the class {instance.__name__}" if isinstance(instance, type) else type(instance).__name__
            raise ComponentError(
                f"Cannot add '{name}': {what} is not a component instance. Decorate the class with @component "
                f"and pass an instance."
            )
        owner = _owner_of(instance)
        if owner is not None:
            held_as = next(n for n, c in owner._graph.components.items() if c is instance)
            where = "this pipeline" if owner is self else "another pipeline"
            raise ComponentError(
                f"Cannot add '{name}': this {type(instance).__name__} instance is already in {where} as "
                f"'{held_as}'. A component instance belongs to one pipeline only; create another instance."
            )
        vars(instance)[_OWNER] = weakref.ref(self)
        self._graph.components[name] = instance
        self._warmed = False

    def connect(self, sender: str, receiver: str) -> Pipeline:
        """Connect an output socket to an input socket.

        Either side may leave out its socket (``"router"`` instead of ``"router.replies"``) when exactly one
        socket fits by type (on the receiving side, among the inputs that have no sender yet). Connecting the
        same two sockets again does nothing.

        Args:
            sender: ``"component.output"`` or ``"component"``.
            receiver: ``"component.input"`` or ``"component"``.

        Returns:
            This pipeline, so calls can be chained.

        Raises:
            ComponentError: For an unknown component or socket, incompatible types, an ambiguous or impossible
                inference, or an input that already has a sender; the message names both components, the
                sockets and the types.
        """
        connection = self._graph.resolve(sender, receiver)
        if connection not in self._graph.connections:
            self._graph.connections.append(connection)
        return self

    def get_component(self, name: str) -> Any:
        """Return the component added under ``name``.

        Raises:
            ConfigurationError: When no component has that name.
        """
        try:
            return self._graph.components[name]
        except KeyError:
            known = ", ".join(repr(n) for n in self._graph.components) or "(none)"
            raise ConfigurationError(f"No component named '{name}' in the pipeline. Components: {known}.") from None

    def walk(self) -> Iterator[tuple[str, Any]]:
        """Yield ``(name, component)`` for every component, in the order they were added."""
        yield from self._graph.components.items()

    def inputs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Describe the inputs the run data can fill: the input sockets that have no sender.

        Returns:
            ``{component: {input: {"type": type, "is_mandatory": bool}}}`` (plus ``"default_value"`` for an
            optional input); components without such inputs are left out.
        """
        return self._graph.free_inputs()

    def outputs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Describe the outputs a run returns: the output sockets that feed no connection.

        Returns:
            ``{component: {output: {"type": type}}}``; components without such outputs are left out.
        """
        return self._graph.free_outputs()

    def warm_up(self) -> None:
        """Call ``warm_up()`` on every component that has one (runs do this by themselves the first time).

        Raises:
            PipelineError: When a component's warm-up failed; names the component, the original is chained.
        """
        for name, instance in self._graph.components.items():
            warm_up = getattr(instance, "warm_up", None)
            if not callable(warm_up):
                continue
            try:
                warm_up()
            except Exception as exc:
                raise PipelineError(
                    f"Component {self._graph.label(name)} failed to warm up: {type(exc).__name__}: {exc}",
                    component_name=name,
                ) from exc
        self._warmed = True

    def _ensure_warm(self) -> None:
        with self._warm_lock:
            if not self._warmed:
                self.warm_up()

    # ---- running -------------------------------------------------------------------------------------------

    def _start(self, data: Mapping[str, Any], include_outputs_from: Iterable[str] | None) -> RunState:
        include = check_include(self._graph, include_outputs_from)
        inputs = normalize_data(self._graph, data)
        return RunState(self._graph, inputs, include, self.max_runs_per_component)

    def _resume(self, pipeline_snapshot: Any) -> tuple[RunState, Mapping[str, Any]]:
        paused_run = getattr(pipeline_snapshot, "_paused_run", None)
        if not callable(paused_run):
            raise ConfigurationTypeError(
                f"pipeline_snapshot must be a PipelineSnapshot, got {type(pipeline_snapshot).__name__}."
            )
        paused: PausedRun = paused_run()
        if sorted(paused.ordered_component_names) != sorted(self._graph.components):
            raise ConfigurationError(
                f"The pipeline snapshot does not fit this pipeline: it has the components "
                f"{sorted(paused.ordered_component_names)}, the pipeline {sorted(self._graph.components)}."
            )
        state = self._start(paused.original_input_data, paused.include_outputs_from)
        state.restore(paused)
        return state, paused.original_input_data

    def _pause(self, state: RunState, pending: list[Task], data: Mapping[str, Any], reason: Any) -> BaseException:
        """Give back the tasks that did not run and turn ``reason`` (a breakpoint or a signal) into what to raise."""
        for task in reversed(pending):
            state.untake(task)
        paused = state.pause(pending[0], data)
        if hasattr(reason, "_pause_pipeline"):
            reason._pause_pipeline(paused)  # raises the breakpoint exception
        converted: BaseException = reason._in_pipeline(paused)
        return converted

    def run(
        self,
        data: Mapping[str, Any],
        include_outputs_from: Iterable[str] | None = None,
        *,
        break_point: Any = None,
        pipeline_snapshot: Any = None,
    ) -> dict[str, dict[str, Any]]:
        """Run the pipeline until no component has anything left to do.

        Args:
            data: ``{component: {input: value}}``, or flat ``{input: value}`` given to every component with an
                unconnected input of that name, or both mixed (a key naming a component with a dict value is
                that component's inputs). Not modified.
            include_outputs_from: Components whose outputs go into the result, consumed or not: exactly those
                of the component's last run (a single string names one component).
            break_point: A :class:`~handrail.dataclasses.Breakpoint` naming a component of this pipeline: the run
                stops before that component's run after ``visit_count`` completed ones and raises
                :class:`~handrail.dataclasses.BreakpointException` carrying the ``pipeline_snapshot`` (written
                into ``snapshot_file_path`` when it is set). An
                :class:`~handrail.dataclasses.AgentBreakpoint` is handed to the Agent it names.
            pipeline_snapshot: A :class:`~handrail.dataclasses.PipelineSnapshot` to go on from (``data`` and
                ``include_outputs_from`` are then the snapshot's): the component it stopped before runs next.
                An Agent that paused inside the pipeline resumes from the snapshot's ``agent_snapshot``.

        Returns:
            ``{component: {output: value}}``: the outputs no connection consumes (the latest value of each),
            and for each component of ``include_outputs_from`` that ran, its last run's outputs; components with
            nothing to report are left out. Values are passed along as they are, not copied.

        Warns:
            UserWarning: At the end of the run, for each component left waiting for a mandatory input that
                never arrived although it received others along connections (say, a component fed by two
                branches of one router), or that feeds that input itself; the message names the component and
                the inputs.

        Raises:
            ConfigurationTypeError: When ``data`` is not a dict with string keys, the value for a component is
                not a dict of its inputs, or ``include_outputs_from`` is not a name or an iterable of names.
            ConfigurationError: Before anything runs: for an unknown component, input or flat key, a value for a
                connected input, a missing mandatory input, or an unknown name in ``include_outputs_from``.
            PipelineError: When a component raised (named; the original is chained) or returned no dict.
            PipelineMaxComponentRuns: When a component would run more than ``max_runs_per_component`` times.
            ComponentError: When ``break_point`` names no component of the pipeline.
            BreakpointException: At the breakpoint, or when an Agent in the pipeline paused (an
                approval pause is an ``HITLBreakpointException``); ``.pipeline_snapshot`` resumes the run.
        """
        if break_point is not None and pipeline_snapshot is not None:
            raise ConfigurationError(
                "pipeline_breakpoint and pipeline_snapshot cannot be provided at the same time: give break_point "
                "to stop a run, pipeline_snapshot to go on from one."
            )
        agent_break = check_break_point(break_point, self._graph.components)
        if pipeline_snapshot is not None:
            state, data = self._resume(pipeline_snapshot)
        else:
            state = self._start(data, include_outputs_from)
        self._ensure_warm()
        while wave := state.next_wave():
            for index, task in enumerate(wave):
                if break_hits(break_point, task.name, state.visits(task.name) - 1):
                    raise self._pause(state, wave[index:], data, break_point)
                if agent_break == task.name and getattr(break_point, "agent_name", None) is not None:
                    task.inputs["break_point"] = break_point
                try:
                    outputs = call_sync(task)
                except Exception as exc:
                    if not callable(getattr(exc, "_in_pipeline", None)):
                        raise
                    raise self._pause(state, wave[index:], data, exc) from None
                state.complete(task, outputs)
        report_stuck(state)
        return state.result

    async def run_async(
        self, data: Mapping[str, Any], include_outputs_from: Iterable[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """Run the pipeline like :meth:`run`, each component starting as soon as its inputs are ready.

        Event-driven: every ready component runs as an asyncio task; as each finishes, its outputs are delivered
        and whatever became ready starts while the others keep running, so independent branches overlap from
        start to end (a branch of three short steps runs alongside one long step). A component's ``run_async``
        is awaited when it has one; otherwise its ``run`` goes to a worker thread. A deferred component (only
        optional inputs missing) runs only once nothing else is running or ready, as in :meth:`run`.

        Args:
            data: As for :meth:`run`.
            include_outputs_from: As for :meth:`run`.

        Returns:
            As for :meth:`run`.

        Warns:
            UserWarning: As for :meth:`run`.

        Raises:
            ConfigurationTypeError: As for :meth:`run`.
            ConfigurationError: As for :meth:`run`.
            PipelineError: As for :meth:`run`; the components still running are cancelled (as they are when
                the run itself is cancelled).
            PipelineMaxComponentRuns: As for :meth:`run`.
        """
        state = self._start(data, include_outputs_from)
        if not self._warmed:
            await to_thread(self._ensure_warm)
        result = await drive_async(state)
        report_stuck(state)
        return result

    # ---- writing out ---------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialize the pipeline.

        Returns:
            ``{"metadata": {...}, "max_runs_per_component": int, "components": {name: {"type": ...,
            "init_parameters": {...}}}, "connections": [{"sender": "a.x", "receiver": "b.y"}]}``.

        Raises:
            SerializationError: When a component cannot be serialized; the message names it.
        """
        components, connections = graph_to_dict(self._graph)
        return {
            "metadata": copy.deepcopy(self.metadata),
            "max_runs_per_component": self.max_runs_per_component,
            "components": components,
            "connections": connections,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, allowed_modules: Iterable[str] | None = None) -> Pipeline:
        """Rebuild a pipeline from :meth:`to_dict`'s output (``data`` is not modified).

        Called from Python, the dotted paths in ``data`` are trusted (as ``X.from_dict`` everywhere: the
        caller is trusted). With ``allowed_modules`` every type named in ``data`` (components, and types their own
        ``from_dict`` imports) is resolved through the allowlist: ``handrail`` plus those prefixes. :meth:`loads`
        (text from a file) always uses the allowlist.

        Args:
            data: The dict form.
            allowed_modules: None to trust the paths, or module prefixes trusted besides ``handrail``, e.g.
                ``("myapp.components",)``.

        Returns:
            The pipeline, its components built and connected.

        Raises:
            SerializationError: For a malformed dict, or a component type outside the allowlist, not importable,
                or refusing its parameters (the message names the component).
            ComponentError: When a connection cannot be made (as :meth:`connect`).
        """
        spec = read_spec(data, allowed_modules)
        pipeline = cls(metadata=spec.metadata, max_runs_per_component=spec.max_runs_per_component)
        for name, instance in spec.components.items():
            pipeline.add_component(name, instance)
        for sender, receiver in spec.connections:
            pipeline.connect(sender, receiver)
        return pipeline

    def dumps(self) -> str:
        """Return the pipeline as YAML (the dict form of :meth:`to_dict`).

        Raises:
            SerializationError: When a component cannot be serialized or holds a value YAML cannot represent.
        """
        return yaml_dump(self.to_dict())

    @classmethod
    def loads(cls, text: str, *, allowed_modules: Iterable[str] = ()) -> Pipeline:
        """Rebuild a pipeline from YAML written by :meth:`dumps`.

        Read like ``yaml.safe_load`` (no Python tags), but duplicate keys and aliases that expand the document
        past 100,000 added nodes are refused.

        Args:
            text: The YAML text.
            allowed_modules: As for :meth:`from_dict`.

        Returns:
            The pipeline.

        Raises:
            SerializationError: For invalid YAML, or as :meth:`from_dict` (an unknown or disallowed component
                type names the component).
            ComponentError: As :meth:`from_dict`.
        """
        return cls.from_dict(yaml_load(text, what="pipeline"), allowed_modules=allowed_modules)

    def show(self) -> str:
        """Return a Mermaid flowchart of the pipeline (components, sockets and types); nothing is sent anywhere.

        Returns:
            The Mermaid source; paste it into any Mermaid viewer.
        """
        return mermaid(self._graph)

    def draw(self, path: str | os.PathLike[str]) -> None:
        """Write the Mermaid flowchart of :meth:`show` to a local file (no network, ever).

        Args:
            path: The file to write; a ``.md`` / ``.markdown`` file gets the chart in a ```` ```mermaid ```` fence
                (rendered by GitHub and most Markdown viewers), any other name the bare Mermaid source.

        Raises:
            OSError: When the file cannot be written.
        """
        target = Path(path)
        text = self.show()
        if target.suffix.lower() in (".md", ".markdown"):
            text = f"```mermaid\n{text}```\n"
        target.write_text(text, encoding="utf-8")


def pipeline_of(instance: Any) -> Pipeline | None:
    """Return the live pipeline holding this very component instance, if any (a copied instance belongs to none).

    Args:
        instance: Anything; an object without instance attributes belongs to no pipeline.

    Returns:
        The pipeline that :meth:`Pipeline.add_component` added ``instance`` to, while that pipeline lives.
    """
    return _owner_of(instance) if hasattr(instance, "__dict__") else None


def _owner_of(instance: Any) -> Pipeline | None:
    """Return the live pipeline holding this very instance, if any (a copied instance belongs to none)."""
    ref = vars(instance).get(_OWNER)
    owner = ref() if isinstance(ref, weakref.ref) else None
    if isinstance(owner, Pipeline) and any(c is instance for c in owner._graph.components.values()):
        return owner
    return None
