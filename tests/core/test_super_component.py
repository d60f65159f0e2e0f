"""SuperComponent: a Pipeline used as one component, with Haystack 2.19's mappings, defaults and mapping errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from handrail import Pipeline, SuperComponent, component, super_component
from handrail.core.component import MISSING, input_sockets, output_sockets
from handrail.core.super_component import InvalidMappingTypeError, InvalidMappingValueError
from handrail.errors import ComponentError, ConfigurationTypeError


@component
class Search:
    def __init__(self) -> None:
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(text=str, n=int)
    def run(self, query: str, top_k: int | None = 3) -> dict[str, Any]:
        return {"text": f"S:{query}:{top_k}", "n": top_k}


@component
class Answer:
    @component.output_types(out=str)
    def run(self, text: str, query: str, suffix: str = "!") -> dict[str, Any]:
        return {"out": f"A:{text}:{query}{suffix}"}


@component
class Echo:
    @component.output_types(out=str)
    def run(self, x: str) -> dict[str, Any]:
        return {"out": x}


def pipeline() -> Pipeline:
    p = Pipeline()
    p.add_component("search", Search())
    p.add_component("answer", Answer())
    p.connect("search.text", "answer.text")
    return p


def test_default_mappings_name_every_free_input_and_every_unconsumed_output() -> None:
    sc = SuperComponent(pipeline())
    assert sc.input_mapping == {
        "query": ["search.query", "answer.query"],
        "top_k": ["search.top_k"],
        "suffix": ["answer.suffix"],
    }
    assert sc.output_mapping == {"search.n": "n", "answer.out": "out"}
    inputs = input_sockets(sc)
    assert inputs["query"].type is str and inputs["query"].default is MISSING
    assert inputs["top_k"].type == int | None and not inputs["top_k"].is_mandatory
    assert {n: s.type for n, s in output_sockets(sc).items()} == {"n": int, "out": str}
    # an input left out is not passed on: the inner component's own default applies
    assert sc.run(query="q") == {"n": 3, "out": "A:S:q:3:q!"}
    assert sc.run(query="q", top_k=1, suffix="?") == {"n": 1, "out": "A:S:q:1:q?"}


def test_explicit_mappings_rename_and_may_read_a_consumed_output() -> None:
    sc = SuperComponent(
        pipeline(),
        input_mapping={"q": ["search.query", "answer.query"]},
        output_mapping={"answer.out": "answer", "search.text": "found"},
    )
    assert sorted(input_sockets(sc)) == ["q"]
    assert sc.run(q="x") == {"answer": "A:S:x:3:x!", "found": "S:x:3"}
    assert asyncio.run(sc.run_async(q="y")) == {"answer": "A:S:y:3:y!", "found": "S:y:3"}


def test_a_super_component_runs_inside_another_pipeline() -> None:
    outer = Pipeline()
    outer.add_component("inner", SuperComponent(pipeline(), output_mapping={"answer.out": "text"}))
    outer.add_component("echo", Echo())
    outer.connect("inner.text", "echo.x")
    assert outer.run({"inner": {"query": "z"}}) == {"echo": {"out": "A:S:z:3:z!"}}


def test_warm_up_reaches_the_pipeline_once() -> None:
    p = pipeline()
    sc = SuperComponent(p)
    sc.warm_up()
    sc.warm_up()
    assert p.get_component("search").warm_ups == 1


@pytest.mark.parametrize(
    ("input_mapping", "output_mapping", "error", "message"),
    [
        ([], None, InvalidMappingTypeError, "input_mapping must be a dictionary"),
        ({"q": "search.query"}, None, InvalidMappingTypeError, "Input paths for 'q' must be a list of strings"),
        ({"q": ["searchquery"]}, None, InvalidMappingValueError, "Invalid path format: 'searchquery'"),
        ({"q": ["nope.query"]}, None, InvalidMappingValueError, "Component 'nope' not found in pipeline inputs"),
        ({"q": ["search.nope"]}, None, InvalidMappingValueError, "Input socket 'nope' not found in component"),
        ({"q": ["answer.text"]}, None, InvalidMappingValueError, "Input socket 'text' not found"),  # connected
        ({"q": ["search.query", "search.top_k"]}, None, InvalidMappingTypeError, "Type conflict for input 'top_k'"),
        (None, {"search.text": 1}, InvalidMappingTypeError, "Output names in output_mapping must be strings"),
        (None, {"nope.x": "y"}, InvalidMappingValueError, "Component 'nope' not found among pipeline outputs"),
        (None, {"search.zz": "y"}, InvalidMappingValueError, "Output socket 'zz' not found in component 'search'"),
        (None, {"search.text": "y", "answer.out": "y"}, InvalidMappingValueError, "Duplicate output name 'y'"),
    ],
)
def test_bad_mappings_are_refused_naming_what_is_wrong(
    input_mapping: Any, output_mapping: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as caught:
        SuperComponent(pipeline(), input_mapping=input_mapping, output_mapping=output_mapping)
    assert isinstance(caught.value, ComponentError | ValueError)


def test_two_components_producing_one_output_name_need_an_output_mapping() -> None:
    p = pipeline()
    p.add_component("echo", Echo())
    with pytest.raises(InvalidMappingValueError, match="Output name conflict: 'out' is produced by multiple"):
        SuperComponent(p)
    assert SuperComponent(p, output_mapping={"echo.out": "echoed"}).run(x="hi", query="q") == {"echoed": "hi"}


def test_an_empty_pipeline_runs_and_returns_nothing_as_in_haystack() -> None:
    wrapper = SuperComponent(Pipeline())  # was refused: "decorate run with @component.output_types"
    assert input_sockets(wrapper) == {} and output_sockets(wrapper) == {}
    assert wrapper.run() == {}
    assert asyncio.run(wrapper.run_async()) == {}
    outer = Pipeline()
    outer.add_component("inner", SuperComponent.from_dict(wrapper.to_dict()))
    assert outer.run({}) == {}


def test_an_empty_output_mapping_runs_the_pipeline_and_returns_nothing() -> None:
    p = Pipeline()
    p.add_component("echo", Echo())
    wrapper = SuperComponent(p, output_mapping={})
    assert output_sockets(wrapper) == {}
    assert wrapper.run(x="hi") == {}


def test_a_pipeline_is_required() -> None:
    with pytest.raises(ValueError, match="Pipeline must be provided to SuperComponent"):
        SuperComponent(None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="wraps a Pipeline, got Echo"):
        SuperComponent(Echo())  # type: ignore[arg-type]


def test_round_trip_keeps_the_mappings_as_given() -> None:
    sc = SuperComponent(pipeline(), input_mapping={"q": ["search.query", "answer.query"]})
    data = sc.to_dict()
    assert data["type"] == "handrail.core.super_component.SuperComponent"
    assert data["init_parameters"]["input_mapping"] == {"q": ["search.query", "answer.query"]}
    assert data["init_parameters"]["output_mapping"] is None  # computed again on load
    assert data["init_parameters"]["is_pipeline_async"] is False
    rebuilt = SuperComponent.from_dict(data)
    assert rebuilt.to_dict() == data
    assert rebuilt.run(q="r") == {"n": 3, "out": "A:S:r:3:r!"}


def test_a_pipeline_holding_a_super_component_round_trips() -> None:
    outer = Pipeline()
    outer.add_component("inner", SuperComponent(pipeline(), output_mapping={"answer.out": "text"}))
    rebuilt = Pipeline.from_dict(outer.to_dict())
    assert rebuilt.run({"inner": {"query": "w"}}) == {"inner": {"text": "A:S:w:3:w!"}}


@super_component
class SearchAndAnswer:
    def __init__(self, suffix: str = "?") -> None:
        self.pipeline = pipeline()
        self.input_mapping = {"question": ["search.query", "answer.query"]}
        self.output_mapping = {"answer.out": "reply"}
        self.suffix = suffix


def test_super_component_decorator_wraps_the_pipeline_its_init_builds() -> None:
    sc = SearchAndAnswer()
    assert sorted(input_sockets(sc)) == ["question"]
    assert sc.run(question="q") == {"reply": "A:S:q:3:q!"}
    assert isinstance(sc, SearchAndAnswer) and SearchAndAnswer.__module__ == __name__
    data = sc.to_dict()
    assert data == {"type": f"{__name__}.SearchAndAnswer", "init_parameters": {"suffix": "?"}}
    assert SearchAndAnswer.from_dict(data).run(question="r") == {"reply": "A:S:r:3:r!"}


def test_super_component_decorator_needs_a_pipeline() -> None:
    @super_component
    class Empty:
        def __init__(self) -> None:
            self.other = 1

    with pytest.raises(ComponentError, match="decorated with @super_component must define a 'pipeline'"):
        Empty()
