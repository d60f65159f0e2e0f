"""``SuperComponent``: a Pipeline used as one component, its inputs and outputs renamed by two mappings.

>>> from typing import Any
>>> from handrail.core.component import component
>>> from handrail.core.pipeline import Pipeline
>>> @component
... class Add:
...     @component.output_types(value=int)
...     def run(self, value: int, amount: int = 1) -> dict[str, Any]:
...         return {"value": value + amount}
>>> pipeline = Pipeline()
>>> pipeline.add_component("first", Add())
>>> pipeline.add_component("second", Add())
>>> _ = pipeline.connect("first.value", "second.value")
>>> adder = SuperComponent(
...     pipeline, input_mapping={"number": ["first.value"]}, output_mapping={"second.value": "total"}
... )
>>> adder.run(number=3)
{'total': 5}
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from handrail.core import _super_mapping as mapping
from handrail.core.component import component, output_sockets
from handrail.core.pipeline import Pipeline
from handrail.core.serialization import init_parameters, qualified_name
from handrail.errors import (
    ComponentError,
    ConfigurationError,
    ConfigurationTypeError,
    InvalidMappingTypeError,
    InvalidMappingValueError,
    SerializationError,
)

__all__ = ["InvalidMappingTypeError", "InvalidMappingValueError", "SuperComponent", "super_component"]

_T = TypeVar("_T")


class _SuperComponent:
    """The machinery of SuperComponent and of classes decorated with :func:`super_component`."""

    def __init__(
        self,
        pipeline: Pipeline,
        input_mapping: dict[str, list[str]] | None = None,
        output_mapping: dict[str, str] | None = None,
    ) -> None:
        self._wrap(pipeline, input_mapping, output_mapping)

    def _wrap(
        self,
        pipeline: Pipeline,
        input_mapping: dict[str, list[str]] | None,
        output_mapping: dict[str, str] | None,
    ) -> None:
        """Check the pipeline and the mappings, and give this instance the sockets they define."""
        if pipeline is None:
            raise ConfigurationError("Pipeline must be provided to SuperComponent.")
        if not isinstance(pipeline, Pipeline):
            raise ConfigurationTypeError(f"SuperComponent wraps a Pipeline, got {type(pipeline).__name__}.")
        self.pipeline = pipeline
        self._original_input_mapping = input_mapping
        self._original_output_mapping = output_mapping
        free_inputs = pipeline.inputs()
        self.input_mapping: dict[str, list[str]] = (
            input_mapping if input_mapping is not None else mapping.default_input_mapping(free_inputs)
        )
        inputs = mapping.input_types(free_inputs, self.input_mapping)
        self.output_mapping: dict[str, str] = (
            output_mapping if output_mapping is not None else mapping.default_output_mapping(pipeline.outputs())
        )
        all_outputs = {name: {s.name: s.type for s in output_sockets(c).values()} for name, c in pipeline.walk()}
        outputs = mapping.output_types(all_outputs, self.output_mapping)
        component.set_input_types(self)
        for name, (tp, default) in inputs.items():
            component.set_input_type(self, name, tp, default)
        component.set_output_types(self, **outputs)
        self._warmed = False

    def warm_up(self) -> None:
        """Warm the wrapped pipeline up (once)."""
        if not self._warmed:
            self.pipeline.warm_up()
            self._warmed = True

    def run(self, **kwargs: Any) -> dict[str, Any]:
        """Run the pipeline with the mapped inputs and return the mapped outputs.

        Args:
            **kwargs: The SuperComponent's inputs, by their mapped names.

        Returns:
            ``{output_name: value}`` for each mapped output its component produced.

        Raises:
            ConfigurationError, PipelineError: As ``Pipeline.run``.
        """
        data, include = self._pipeline_inputs(kwargs)
        return self._outputs(self.pipeline.run(data, include_outputs_from=include))

    async def run_async(self, **kwargs: Any) -> dict[str, Any]:
        """Run the pipeline like :meth:`run`, through ``Pipeline.run_async``.

        Args:
            **kwargs: As for :meth:`run`.

        Returns:
            As for :meth:`run`.
        """
        data, include = self._pipeline_inputs(kwargs)
        return self._outputs(await self.pipeline.run_async(data, include_outputs_from=include))

    def _pipeline_inputs(self, kwargs: Mapping[str, Any]) -> tuple[dict[str, dict[str, Any]], set[str]]:
        data: dict[str, dict[str, Any]] = {}
        for input_name, paths in self.input_mapping.items():
            value = kwargs.get(input_name, mapping.DELEGATE)
            if value is mapping.DELEGATE:
                continue
            for path in paths:
                name, socket = mapping.split_path(path)
                data.setdefault(name, {})[socket] = value
        include = {mapping.split_path(path)[0] for path in self.output_mapping}
        return data, include

    def _outputs(self, result: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        outputs: dict[str, Any] = {}
        for path, output_name in self.output_mapping.items():
            name, socket = mapping.split_path(path)
            if socket in result.get(name, {}):
                outputs[output_name] = result[name][socket]
        return outputs

    def show(self) -> str:
        """Return the Mermaid flowchart of the wrapped pipeline (see ``Pipeline.show``)."""
        return self.pipeline.show()

    def draw(self, path: str | os.PathLike[str]) -> None:
        """Write the wrapped pipeline's Mermaid flowchart to a local file (see ``Pipeline.draw``)."""
        self.pipeline.draw(path)


@component
class SuperComponent(_SuperComponent):
    """A Pipeline wrapped as one component: its inputs and outputs are the ones the mappings name.

    ``run(**inputs)`` sends each input to every pipeline socket it is mapped to, runs the pipeline and returns
    the mapped outputs under their new names (an output its component did not produce this run is left out).
    A SuperComponent can be added to another Pipeline, or wrapped by a ComponentTool (a
    :class:`~handrail.tools.PipelineTool` is exactly that).

    Args:
        pipeline: The pipeline to wrap (a ``Pipeline``; its components stay in it).
        input_mapping: ``{input_name: ["component.socket", ...]}``: one input may feed several sockets, which
            then need one common type; it is mandatory when any of them is. Left out: every free input of the
            pipeline (an input socket no connection feeds), named after its socket, sockets of the same name
            sharing one input.
        output_mapping: ``{"component.socket": output_name}``: any output socket of any component (a consumed
            one too). Left out: every output no connection consumes, named after its socket.

    Raises:
        ConfigurationError: When ``pipeline`` is None (a ``ValueError``).
        ConfigurationTypeError: When ``pipeline`` is not a Pipeline.
        InvalidMappingTypeError: When a mapping is not a dict (of lists of strings, for inputs), an output name
            is not a string, or one input maps sockets of conflicting types.
        InvalidMappingValueError: For a path that is not ``"component.socket"``, a component or socket the
            pipeline does not have (for inputs: that is not free), an output name used twice, or, without an
            ``output_mapping``, two components producing an output of the same name.
    """

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters": {pipeline, input_mapping, output_mapping, is_pipeline_async}}``.

        The mappings are written as given (None for a default one, computed again on load).

        Raises:
            SerializationError: When a component of the pipeline cannot be serialized.
        """
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "pipeline": self.pipeline.to_dict(),
                "input_mapping": self._original_input_mapping,
                "output_mapping": self._original_output_mapping,
                "is_pipeline_async": type(self.pipeline).__name__ == "AsyncPipeline",
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SuperComponent:
        """Rebuild a SuperComponent from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is malformed or the pipeline cannot be rebuilt.
        """
        if not isinstance(data, dict) or not isinstance(data.get("init_parameters"), dict):
            raise SerializationError(
                "Cannot rebuild SuperComponent: expected {'type': ..., 'init_parameters': {...}}, "
                f"got {data!r:.200}"
            )
        given = dict(data["init_parameters"])
        is_async = given.pop("is_pipeline_async", False)
        params = init_parameters({"type": data.get("type"), "init_parameters": given}, cls)
        pipeline_data = params.get("pipeline")
        if not isinstance(pipeline_data, dict):
            raise SerializationError(
                f"Cannot rebuild SuperComponent: 'pipeline' must be a pipeline dict, got {pipeline_data!r:.100}"
            )
        pipeline_class: Any = Pipeline
        if is_async:  # AsyncPipeline's dict form is Pipeline's; it is exported from handrail as in Haystack
            pipeline_class = getattr(importlib.import_module("handrail"), "AsyncPipeline", Pipeline)
        pipeline = pipeline_class.from_dict(pipeline_data)
        return cls(pipeline, params.get("input_mapping"), params.get("output_mapping"))


def super_component(cls: type[_T]) -> type[_T]:
    """Turn a class whose ``__init__`` builds ``self.pipeline`` into a SuperComponent-like component.

    After the class's own ``__init__`` ran, the instance wraps ``self.pipeline`` with ``self.input_mapping`` and
    ``self.output_mapping`` when it set them (the defaults otherwise), exactly as :class:`SuperComponent` does.
    The class is serialized from its own ``__init__`` arguments (the default component ``to_dict``).

    Args:
        cls: A class whose ``__init__`` sets ``self.pipeline`` (a Pipeline).

    Returns:
        A component class of the same name and module, with ``run``, ``run_async`` and ``warm_up``.

    Raises:
        ComponentError: When an instance's ``__init__`` set no ``pipeline`` (raised on construction).

    Examples:
        >>> from typing import Any
        >>> @component
        ... class Twice:
        ...     @component.output_types(value=int)
        ...     def run(self, value: int) -> dict[str, Any]:
        ...         return {"value": 2 * value}
        >>> @super_component
        ... class Quadruple:
        ...     def __init__(self) -> None:
        ...         self.pipeline = Pipeline()
        ...         self.pipeline.add_component("a", Twice())
        ...         self.pipeline.add_component("b", Twice())
        ...         self.pipeline.connect("a.value", "b.value")
        >>> Quadruple().run(value=3)
        {'value': 12}
    """
    original_init: Callable[..., None] = cls.__init__

    @functools.wraps(original_init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if not isinstance(getattr(self, "pipeline", None), Pipeline):
            raise ComponentError(
                f"Class {cls.__name__} decorated with @super_component must define a 'pipeline' attribute "
                f"(a Pipeline) in __init__."
            )
        self._wrap(self.pipeline, getattr(self, "input_mapping", None), getattr(self, "output_mapping", None))

    namespace = {k: v for k, v in vars(cls).items() if k not in ("__dict__", "__weakref__")}
    namespace["__init__"] = __init__
    bases = (_SuperComponent, *(b for b in cls.__bases__ if b is not object))
    built: type[_T] = type(cls.__name__, bases, namespace)
    return component(built)
