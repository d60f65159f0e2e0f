from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Dict, List, Optional, Set, Tuple, Union  # noqa: UP035 - the aliases are under test

import pytest

from handrail.core.component import (
    MISSING,
    ComponentError,
    InputSocket,
    OutputSocket,
    component,
    input_sockets,
    is_component,
    output_sockets,
    types_compatible,
)
from handrail.core.serialization import restricted_imports
from handrail.errors import (
    ConfigurationError,
    NoRouteSelectedException,
    PipelineError,
    PipelineMaxComponentRuns,
    RunError,
    SerializationError,
)


@component
class Upper:
    def __init__(self, suffix: str = "!") -> None:
        self.suffix = suffix

    @component.output_types(text=str, length=int)
    def run(self, text: str, times: int = 1) -> dict[str, Any]:
        out = (text.upper() + self.suffix) * times
        return {"text": out, "length": len(out)}


@component
class Wrapper:
    """Holds another component (nested serialization)."""

    def __init__(self, inner: Any, labels: list[str] | None = None, **extra: Any) -> None:
        self.inner = inner
        self.labels = labels
        self.extra = extra

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        return self.inner.run(text=text)


@component
class Dynamic:
    def __init__(self, names: list[str]) -> None:
        component.set_input_types(self, **{n: int for n in names})
        component.set_output_types(self, total=int)

    def run(self, **kwargs: Any) -> dict[str, Any]:
        return {"total": sum(kwargs.values())}


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


@component
class Base:
    def __init__(self, a: int = 1) -> None:
        self.a = a

    @component.output_types(out=int)
    def run(self, value: int) -> dict[str, Any]:
        return {"out": value + self.a}


@component
class Child(Base):
    def __init__(self, b: int = 2) -> None:
        super().__init__(a=10)
        self.b = b


# --- decoration and sockets -------------------------------------------------------------------


def test_sockets_come_from_the_run_signature_and_output_types() -> None:
    inputs = input_sockets(Upper())
    assert inputs == {"text": InputSocket("text", str), "times": InputSocket("times", int, 1)}
    assert inputs["text"].is_mandatory and not inputs["times"].is_mandatory
    assert output_sockets(Upper()) == {"text": OutputSocket("text", str), "length": OutputSocket("length", int)}
    assert input_sockets(Upper) == inputs  # the class answers too
    assert Upper().run(text="a", times=2) == {"text": "A!A!", "length": 4}


def test_missing_hint_is_any_and_var_args_are_not_sockets() -> None:
    @component
    class Loose:
        @component.output_types(out=Any)
        def run(self, value, *args: Any, flag: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
            return {"out": value}

    assert input_sockets(Loose()) == {"value": InputSocket("value", Any), "flag": InputSocket("flag", bool, False)}


def test_none_default_is_a_real_default() -> None:
    @component
    class Opt:
        @component.output_types(out=Optional[int])  # noqa: UP045 - the typing alias on purpose
        def run(self, value: int | None = None) -> dict[str, Any]:
            return {"out": value}

    socket = input_sockets(Opt())["value"]
    assert socket.default is None and not socket.is_mandatory


def test_is_component() -> None:
    assert is_component(Upper) and is_component(Upper())
    assert not is_component(Point) and not is_component(Point(1)) and not is_component(object())
    assert Upper.__handrail_component__ is True  # type: ignore[attr-defined]


def test_a_component_without_outputs_is_refused_when_built() -> None:
    @component
    class NoOutputs:
        def run(self, value: int) -> dict[str, Any]:
            return {}

    with pytest.raises(ComponentError, match=r"NoOutputs has no output sockets.*output_types"):
        NoOutputs()


def test_a_component_that_declares_no_outputs_with_set_output_types_is_built() -> None:
    @component
    class Sink:
        def __init__(self) -> None:
            component.set_output_types(self)  # declared, not forgotten (Haystack allows it too)

        def run(self, value: int) -> dict[str, Any]:
            return {}

    assert output_sockets(Sink()) == {}


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: component(len), "decorates classes"),  # type: ignore[arg-type]
        (lambda: component(type("NoRun", (), {})), "NoRun has no run"),
    ],
)
def test_bad_definitions_are_refused_at_decoration(build: Callable[[], Any], match: str) -> None:
    with pytest.raises(ComponentError, match=match):
        build()


def test_positional_only_run_parameter_is_refused() -> None:
    with pytest.raises(ComponentError, match="'value' positionally only"):

        @component
        class Positional:
            @component.output_types(out=int)
            def run(self, value: int, /) -> dict[str, Any]:
                return {"out": value}


def test_unresolvable_hint_is_refused() -> None:
    with pytest.raises(ComponentError, match=r"Cannot resolve the type hints of Bad\.run"):

        @component
        class Bad:
            @component.output_types(out=int)
            def run(self, value: NotDefinedAnywhere) -> dict[str, Any]:  # type: ignore[name-defined]  # noqa: F821
                return {"out": value}


def test_run_async_must_be_a_coroutine_with_the_same_parameters() -> None:
    with pytest.raises(ComponentError, match="async def"):

        @component
        class SyncTwin:
            @component.output_types(out=int)
            def run(self, value: int) -> dict[str, Any]:
                return {"out": value}

            def run_async(self, value: int) -> dict[str, Any]:
                return {"out": value}

    with pytest.raises(ComponentError, match="same parameters as run"):

        @component
        class Drift:
            @component.output_types(out=int)
            def run(self, value: int) -> dict[str, Any]:
                return {"out": value}

            async def run_async(self, other: int) -> dict[str, Any]:
                return {"out": other}


# --- dynamic sockets --------------------------------------------------------------------------


def test_dynamic_sockets_replace_the_signature_ones_per_instance() -> None:
    a, b = Dynamic(["x", "y"]), Dynamic(["z"])
    assert input_sockets(a) == {"x": InputSocket("x", int), "y": InputSocket("y", int)}
    assert list(input_sockets(b)) == ["z"]
    assert output_sockets(a) == {"total": OutputSocket("total", int)}
    assert a.run(x=1, y=2) == {"total": 3}
    assert input_sockets(Dynamic) == {}  # the class keeps the signature-derived (none: run takes **kwargs)


def test_set_input_type_adds_to_the_current_sockets_with_a_default() -> None:
    @component
    class Builder:
        def __init__(self) -> None:
            component.set_input_type(self, "extra", str, default="")
            component.set_input_type(self, "needed", int)

        @component.output_types(out=str)
        def run(self, text: str, **kwargs: Any) -> dict[str, Any]:
            return {"out": text}

    sockets = input_sockets(Builder())
    assert list(sockets) == ["text", "extra", "needed"]
    assert sockets["extra"].default == "" and sockets["needed"].is_mandatory and sockets["text"].is_mandatory


def test_dynamic_names_need_kwargs_in_run() -> None:
    @component
    class Strict:
        def __init__(self, name: str) -> None:
            component.set_input_types(self, **{name: int})

        @component.output_types(out=int)
        def run(self, value: int) -> dict[str, Any]:
            return {"out": value}

    assert list(input_sockets(Strict("value"))) == ["value"]  # a run parameter: fine
    with pytest.raises(ComponentError, match=r"Cannot add input sockets \['other'\] to Strict.*\*\*kwargs"):
        Strict("other")


def test_socket_helpers_refuse_non_components() -> None:
    with pytest.raises(ComponentError, match="Point is not a component"):
        input_sockets(Point(1))
    with pytest.raises(ComponentError, match="not a component"):
        output_sockets(object())
    with pytest.raises(ComponentError, match="not a component"):
        component.set_output_types(Point(1), out=int)
    with pytest.raises(ComponentError, match="on an instance, not on the class"):
        component.set_input_types(Upper, x=int)


def test_sockets_and_missing_are_immutable_values() -> None:
    socket = InputSocket("x", int)
    with pytest.raises(AttributeError):
        socket.name = "y"  # type: ignore[misc]
    assert repr(MISSING) == "MISSING"
    assert copy.deepcopy(MISSING) is MISSING and copy.copy(MISSING) is MISSING
    assert copy.deepcopy(socket).is_mandatory


# --- type compatibility -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sender", "receiver"),
    [
        (int, int),
        (Any, int),
        (int, Any),
        (List[int], list[int]),  # noqa: UP006
        (list[int], List[int]),  # noqa: UP006
        (Dict[str, int], dict[str, int]),  # noqa: UP006
        (Tuple[int, str], tuple[int, str]),  # noqa: UP006
        (Set[str], set[str]),  # noqa: UP006
        (Optional[int], int | None),  # noqa: UP045
        (int, Optional[int]),  # noqa: UP045
        (int, Union[str, int]),  # noqa: UP007
        (None, Optional[str]),  # noqa: UP045
        (bool, int),
        (list[bool], list[int]),
        (list[int], Sequence[int]),
        (dict[str, list[int]], dict[str, list[Any]]),
        (list[int], list),
        (list, list[int]),
        (Callable[[int], str], Callable[[int], str]),
        (Union[int, str], Union[str, int, None]),  # noqa: UP007
    ],
)
def test_compatible_types(sender: Any, receiver: Any) -> None:
    assert types_compatible(sender, receiver)


@pytest.mark.parametrize(
    ("sender", "receiver"),
    [
        (int, str),
        (int, bool),
        (list[str], list[int]),
        (Optional[int], int),  # noqa: UP045 - None may flow
        (int | str, int),
        (dict[str, int], dict[int, int]),
        (tuple[int, str], tuple[int]),
        (list[int], dict[int, int]),
        (Sequence[int], list[int]),
        (Iterable[int], list[int]),
        (Callable[[int], str], Callable[[str], str]),
    ],
)
def test_incompatible_types(sender: Any, receiver: Any) -> None:
    assert not types_compatible(sender, receiver)


# --- serialization ----------------------------------------------------------------------------


def test_default_to_dict_records_init_arguments_with_defaults_filled() -> None:
    assert Upper().to_dict() == {"type": f"{__name__}.Upper", "init_parameters": {"suffix": "!"}}
    assert Upper("?").to_dict()["init_parameters"] == {"suffix": "?"}
    rebuilt = Upper.from_dict(Upper(suffix="?").to_dict())  # type: ignore[attr-defined]
    assert isinstance(rebuilt, Upper) and rebuilt.suffix == "?"


def test_nested_components_round_trip_and_kwargs_are_flattened() -> None:
    wrapper = Wrapper(Upper(suffix="?"), labels=("a", "b"), mode="fast")  # type: ignore[arg-type]
    data = wrapper.to_dict()
    assert data["init_parameters"] == {
        "inner": {"type": f"{__name__}.Upper", "init_parameters": {"suffix": "?"}},
        "labels": ["a", "b"],
        "mode": "fast",
    }
    before = copy.deepcopy(data)
    rebuilt = Wrapper.from_dict(data)  # type: ignore[attr-defined]
    assert data == before
    assert isinstance(rebuilt.inner, Upper) and rebuilt.inner.suffix == "?"
    assert rebuilt.labels == ["a", "b"] and rebuilt.extra == {"mode": "fast"}
    assert rebuilt.run(text="x") == {"text": "X?", "length": 2}


def test_nested_types_obey_the_import_allowlist() -> None:
    data = Wrapper(Upper()).to_dict()
    with restricted_imports(["handrail"]), pytest.raises(SerializationError, match="not in the allowlist"):
        Wrapper.from_dict(data)  # type: ignore[attr-defined]


def test_values_that_cannot_be_written_are_refused() -> None:
    with pytest.raises(SerializationError, match=r"Wrapper\.inner: a Point is not JSON-compatible"):
        Wrapper(Point(1)).to_dict()  # type: ignore[attr-defined]


def test_from_dict_refuses_unknown_parameters() -> None:
    with pytest.raises(SerializationError, match=r"unknown init parameters \['colour'\]"):
        Upper.from_dict({"type": "x.Upper", "init_parameters": {"colour": "red"}})  # type: ignore[attr-defined]


def test_own_to_dict_and_from_dict_are_kept() -> None:
    @component
    class Own:
        def __init__(self, value: int) -> None:
            self.value = value

        @component.output_types(out=int)
        def run(self, x: int) -> dict[str, Any]:
            return {"out": x}

        def to_dict(self) -> dict[str, Any]:
            return {"type": "own", "init_parameters": {"v": self.value}}

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Own:
            return cls(data["init_parameters"]["v"])

    assert Own(3).to_dict() == {"type": "own", "init_parameters": {"v": 3}}
    assert Own.from_dict(Own(3).to_dict()).value == 3
    assert "__handrail_init_parameters__" not in vars(Own(3))


def test_a_decorated_subclass_records_its_own_arguments() -> None:
    child = Child(b=5)
    assert (child.a, child.b) == (10, 5)
    assert child.to_dict()["init_parameters"] == {"b": 5}  # type: ignore[attr-defined]
    assert child.run(value=1) == {"out": 11}
    assert Base(a=3).to_dict()["init_parameters"] == {"a": 3}  # type: ignore[attr-defined]


def test_init_keeps_its_signature() -> None:
    import inspect

    assert list(inspect.signature(Upper).parameters) == ["suffix"]


# --- errors -----------------------------------------------------------------------------------


def test_pipeline_error_classes() -> None:
    assert issubclass(ComponentError, ConfigurationError) and issubclass(ComponentError, ValueError)
    assert issubclass(PipelineMaxComponentRuns, PipelineError) and issubclass(PipelineError, RunError)
    assert issubclass(NoRouteSelectedException, RunError)
    error = PipelineError("Component 'llm' failed", component_name="llm")
    assert error.component_name == "llm" and str(error) == "Component 'llm' failed"
