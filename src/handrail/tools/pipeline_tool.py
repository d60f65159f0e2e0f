"""PipelineTool: a Pipeline offered to the model as one tool (a SuperComponent wrapped by a ComponentTool)."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable, Mapping
from typing import Any

from handrail.core.pipeline import Pipeline
from handrail.core.serialization import deserialize_callable, qualified_name, serialize_callable
from handrail.core.super_component import SuperComponent
from handrail.errors import ConfigurationError, SerializationError
from handrail.tools.component_tool import ComponentTool
from handrail.tools.preview import Preview
from handrail.tools.tool import _map_handlers, read_preview

__all__ = ["PipelineTool"]


class PipelineTool(ComponentTool):
    """A Tool that runs a Pipeline: the model's arguments are the pipeline's mapped inputs.

    Built as ``ComponentTool(SuperComponent(pipeline, input_mapping, output_mapping), ...)``: the schema comes
    from the SuperComponent's inputs (each one's type is the pipeline socket's), and the result is the dict of
    mapped outputs. Warming the tool up warms the pipeline up (once).

    Args:
        pipeline: The pipeline to run.
        name: The tool's name.
        description: What the tool does, for the model.
        input_mapping: ``{argument: ["component.socket", ...]}``; see
            :class:`~handrail.core.super_component.SuperComponent` (left out: every free input of the pipeline).
        output_mapping: ``{"component.socket": output_name}`` (left out: every output no connection consumes).
        parameters: A JSON Schema to use instead of the generated one.
        outputs_to_string: How the result dict becomes text; see :class:`~handrail.tools.tool.Tool`.
        inputs_from_state: ``{state_key: argument}``: arguments read from State (kept out of the schema).
        outputs_to_state: ``{state_key: {"source": output_name, "handler": fn}}``.
        preview: ``preview(arguments) -> Preview | str``, shown to the person deciding a call.

    Raises:
        ConfigurationError: When ``pipeline`` is not a Pipeline (a ``ValueError``, as in Haystack), or as
            :class:`~handrail.tools.ComponentTool` and SuperComponent (bad mappings).

    Examples:
        >>> from typing import Any
        >>> from handrail.core.component import component
        >>> @component
        ... class Greet:
        ...     @component.output_types(text=str)
        ...     def run(self, who: str) -> dict[str, Any]:
        ...         return {"text": f"Hello, {who}!"}
        >>> pipeline = Pipeline()
        >>> pipeline.add_component("greet", Greet())
        >>> t = PipelineTool(
        ...     pipeline, name="greet", description="Greet someone.", input_mapping={"name": ["greet.who"]}
        ... )
        >>> t.parameters["required"], t.invoke(name="Ada")
        (['name'], {'text': 'Hello, Ada!'})
    """

    def __init__(
        self,
        pipeline: Pipeline,
        *,
        name: str,
        description: str,
        input_mapping: dict[str, list[str]] | None = None,
        output_mapping: dict[str, str] | None = None,
        parameters: dict[str, Any] | None = None,
        outputs_to_string: dict[str, Any] | None = None,
        inputs_from_state: dict[str, str] | None = None,
        outputs_to_state: dict[str, dict[str, Any]] | None = None,
        preview: Callable[[dict[str, Any]], Preview | str] | None = None,
    ) -> None:
        if not isinstance(pipeline, Pipeline):
            raise ConfigurationError(
                f"The 'pipeline' parameter must be an instance of Pipeline or AsyncPipeline. "
                f"Got {type(pipeline).__name__} instead."
            )
        super().__init__(
            SuperComponent(pipeline, input_mapping=input_mapping, output_mapping=output_mapping),
            name=name,
            description=description,
            parameters=parameters,
            outputs_to_string=outputs_to_string,
            inputs_from_state=inputs_from_state,
            outputs_to_state=outputs_to_state,
            preview=preview,
        )
        if parameters is None:  # the schema's top-level text: this tool's description, not SuperComponent.run's
            self.parameters["description"] = description
        self.pipeline = pipeline
        self.input_mapping = input_mapping
        self.output_mapping = output_mapping

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}`` with the pipeline in its dict form.

        The mappings and ``parameters`` are written as given (None: computed again on load).

        Raises:
            SerializationError: When a component of the pipeline or a handler cannot be serialized.
        """
        params: dict[str, Any] = {
            "pipeline": self.pipeline.to_dict(),
            "name": self.name,
            "description": self.description,
            "input_mapping": copy.deepcopy(self.input_mapping),
            "output_mapping": copy.deepcopy(self.output_mapping),
            "parameters": copy.deepcopy(self._unresolved_parameters),
            "outputs_to_string": _map_handlers(self.outputs_to_string, serialize_callable),
            "inputs_from_state": dict(self.inputs_from_state) if self.inputs_from_state else None,
            "outputs_to_state": _map_handlers(self.outputs_to_state, serialize_callable),
            "is_pipeline_async": type(self.pipeline).__name__ == "AsyncPipeline",
        }
        if self.preview is not None:
            params["preview"] = serialize_callable(self.preview)
        return {"type": qualified_name(self), "init_parameters": params}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PipelineTool:
        """Rebuild a PipelineTool from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When ``init_parameters`` is malformed, a path cannot be imported, or the pipeline
                cannot be rebuilt.
        """
        raw = data.get("init_parameters") if isinstance(data, Mapping) else None
        if not isinstance(raw, Mapping) or not isinstance(raw.get("pipeline"), dict):
            raise SerializationError(
                "Cannot rebuild PipelineTool: expected {'type': ..., 'init_parameters': {'pipeline': {...}, ...}}, "
                f"got {data!r:.200}"
            )
        params = copy.deepcopy(dict(raw))
        pipeline_class: Any = Pipeline
        if params.pop("is_pipeline_async", False):  # AsyncPipeline is exported from handrail, as in Haystack
            pipeline_class = getattr(importlib.import_module("handrail"), "AsyncPipeline", Pipeline)
        params["pipeline"] = pipeline_class.from_dict(params["pipeline"])
        for field in ("outputs_to_string", "outputs_to_state"):
            params[field] = _map_handlers(params.get(field), deserialize_callable, field)
        if "preview" in params:
            params["preview"] = read_preview(params["preview"])
        try:
            return cls(**params)
        except TypeError as exc:  # an unknown or missing init parameter
            raise SerializationError(f"Cannot rebuild PipelineTool: {exc}") from exc
