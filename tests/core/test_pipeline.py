"""Pipeline: building (add_component, connect and its socket inference), run data, and the run semantics.

The components defined here are module-level so the serialization tests (test_pipeline_io.py) can import them.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any, List  # noqa: UP035 - typing.List is the point of one test

import pytest

from handrail.core.component import component
from handrail.core.pipeline import Pipeline
from handrail.errors import (
    ComponentError,
    ConfigurationError,
    ConfigurationTypeError,
    PipelineError,
    PipelineMaxComponentRuns,
    SerializationError,
)

# ---- components -------------------------------------------------------------------------------------------


@component
class Upper:
    def __init__(self, suffix: str = "") -> None:
        self.suffix = suffix
        self.calls: list[dict[str, Any]] = []

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        self.calls.append({"text": text})
        return {"text": text.upper() + self.suffix}


@component
class Concat:
    @component.output_types(text=str)
    def run(self, left: str, right: str) -> dict[str, Any]:
        return {"text": left + right}


@component
class Counter:
    """Adds ``step`` to ``value``; counts its runs."""

    def __init__(self) -> None:
        self.runs = 0

    @component.output_types(value=int)
    def run(self, value: int, step: int = 1) -> dict[str, Any]:
        self.runs += 1
        return {"value": value + step}


@component
class Threshold:
    """A router: ``below`` while the value is under the limit, else ``above``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    @component.output_types(below=int, above=int)
    def run(self, value: int) -> dict[str, Any]:
        return {"below": value} if value < self.limit else {"above": value}


@component
class LoopStart:
    """The entry of a loop: the run data's ``value`` first, then whatever comes back as ``feedback``."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int | None]] = []

    @component.output_types(value=int)
    def run(self, value: int, feedback: int | None = None) -> dict[str, Any]:
        self.seen.append((value, feedback))
        return {"value": feedback if feedback is not None else value}


@component
class Words:
    @component.output_types(words=List[str], first=str)  # noqa: UP006
    def run(self, text: str) -> dict[str, Any]:
        words = text.split()
        return {"words": words, "first": words[0]}


@component
class Joiner:
    @component.output_types(text=str)
    def run(self, words: list[str], separator: str = " ") -> dict[str, Any]:
        return {"text": separator.join(words)}


@component
class Source:
    """No inputs at all: runs once per pipeline run."""

    @component.output_types(text=str)
    def run(self) -> dict[str, Any]:
        return {"text": "from source"}


@component
class Greeter:
    """A mandatory input from the run data and an optional one that may come along a connection."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []

    @component.output_types(text=str)
    def run(self, name: str, title: str | None = None) -> dict[str, Any]:
        self.calls.append((name, title))
        return {"text": f"Hello {title + ' ' if title else ''}{name}"}


@component
class Gate:
    """A router with one branch: ``passed`` only when open."""

    @component.output_types(passed=str)
    def run(self, text: str, open: bool) -> dict[str, Any]:
        return {"passed": text} if open else {}


@component
class Failing:
    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        raise KeyError(f"no entry for {text}")


@component
class NotADict:
    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        return [text]  # type: ignore[return-value]


@component
class WarmCounter:
    def __init__(self) -> None:
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        assert self.warm_ups > 0, "run before warm_up"
        return {"text": text}


@component
class BrokenWarmUp:
    def warm_up(self) -> None:
        raise OSError("model file missing")

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, Any]:
        return {"text": text}


@component
class Template:
    """Dynamic inputs (like a prompt builder): one optional socket per variable, received through **kwargs."""

    def __init__(self, variables: list[str]) -> None:
        self.received: dict[str, Any] = {}
        for variable in variables:
            component.set_input_type(self, variable, str, default="?")

    @component.output_types(text=str)
    def run(self, **kwargs: Any) -> dict[str, Any]:
        self.received = kwargs
        return {"text": " ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))}


class Plain:
    def run(self, text: str) -> dict[str, Any]:
        return {"text": text}


@component
class Pair:
    """Two mandatory inputs; in the tests below fed by the two branches of one router, so it never gets both."""

    def __init__(self) -> None:
        self.runs = 0

    @component.output_types(total=int)
    def run(self, a: int, b: int) -> dict[str, Any]:
        self.runs += 1
        return {"total": a + b}


def loop_pipeline(limit: int = 3, max_runs: int = 100) -> Pipeline:
    """start -> counter -> threshold; threshold.below loops back to start.feedback; threshold.above is the result."""
    pipeline = Pipeline(max_runs_per_component=max_runs)
    pipeline.add_component("start", LoopStart())
    pipeline.add_component("counter", Counter())
    pipeline.add_component("threshold", Threshold(limit))
    pipeline.connect("start.value", "counter.value")
    pipeline.connect("counter.value", "threshold.value")
    pipeline.connect("threshold.below", "start.feedback")
    return pipeline


# ---- add_component --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "a.b", ".a"])
def test_add_component_refuses_bad_names(name: str) -> None:
    with pytest.raises(ComponentError, match="Invalid component name"):
        Pipeline().add_component(name, Upper())


def test_add_component_refuses_a_non_string_name() -> None:
    with pytest.raises(ConfigurationTypeError, match="must be a string"):
        Pipeline().add_component(1, Upper())  # type: ignore[arg-type]


def test_add_component_refuses_duplicates() -> None:
    pipeline = Pipeline()
    pipeline.add_component("upper", Upper())
    with pytest.raises(ComponentError, match="'upper' already exists in this pipeline"):
        pipeline.add_component("upper", Upper())


def test_add_component_refuses_non_components_and_classes() -> None:
    with pytest.raises(ComponentError, match=r"Cannot add 'plain': Plain is not a component.*@component"):
        Pipeline().add_component("plain", Plain())
    with pytest.raises(ComponentError, match="the class Upper is not a component instance"):
        Pipeline().add_component("upper", Upper)


def test_one_instance_belongs_to_one_pipeline() -> None:
    upper = Upper()
    first = Pipeline()
    first.add_component("upper", upper)
    with pytest.raises(ComponentError, match="already in this pipeline as 'upper'"):
        first.add_component("again", upper)
    with pytest.raises(ComponentError, match="already in another pipeline as 'upper'"):
        Pipeline().add_component("upper", upper)
    Pipeline().add_component("copy", copy.deepcopy(upper))  # a copy is another instance


def test_get_component_and_walk() -> None:
    pipeline = Pipeline()
    upper, concat = Upper(), Concat()
    pipeline.add_component("upper", upper)
    pipeline.add_component("concat", concat)
    assert pipeline.get_component("concat") is concat
    assert list(pipeline.walk()) == [("upper", upper), ("concat", concat)]
    with pytest.raises(ConfigurationError, match=r"named 'nope' in the pipeline\. Components: 'upper', 'concat'"):
        pipeline.get_component("nope")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_runs_per_component": 0}, ConfigurationError, "at least 1"),
        ({"max_runs_per_component": "5"}, ConfigurationTypeError, "must be an integer"),
        ({"max_runs_per_component": True}, ConfigurationTypeError, "must be an integer"),
        ({"metadata": ["x"]}, ConfigurationTypeError, "metadata must be a dict"),
    ],
)
def test_constructor_checks_its_arguments(kwargs: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        Pipeline(**kwargs)


# ---- connect --------------------------------------------------------------------------------------------


def two(first: Any, second: Any, names: tuple[str, str] = ("a", "b")) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component(names[0], first)
    pipeline.add_component(names[1], second)
    return pipeline


def test_connect_with_both_sockets_and_chaining() -> None:
    pipeline = two(Upper(), Upper())
    assert pipeline.connect("a.text", "b.text") is pipeline
    assert pipeline.run({"a": {"text": "hi"}}) == {"b": {"text": "HI"}}


def test_connect_infers_a_left_out_socket_on_either_side() -> None:
    inferred = two(Words(), Joiner())
    inferred.connect("a", "b")  # only words (list[str]) fits Joiner's list[str] input
    assert inferred.to_dict()["connections"] == [{"sender": "a.words", "receiver": "b.words"}]
    receiver_left_out = two(Upper(), Concat())
    receiver_left_out.connect("a.text", "b.left")
    receiver_left_out.connect("a.text", "b")  # left has its sender now: right is the only free one
    assert receiver_left_out.to_dict()["connections"][1] == {"sender": "a.text", "receiver": "b.right"}


def test_connect_prefers_the_pair_with_equal_names_among_several() -> None:
    pipeline = two(Words(), Upper())  # words (list[str]) does not fit; first (str) fits text (str)
    pipeline.connect("a", "b")
    assert pipeline.to_dict()["connections"] == [{"sender": "a.first", "receiver": "b.text"}]
    same_name = two(Upper(), Concat(), ("upper", "concat"))
    with pytest.raises(ComponentError, match=r"several sockets fit \('upper.text' -> 'concat.left', "):
        same_name.connect("upper", "concat")


def test_connect_treats_typing_aliases_as_builtin_generics() -> None:
    pipeline = two(Words(), Joiner())
    pipeline.connect("a.words", "b.words")  # List[str] -> list[str]
    assert pipeline.run({"text": "x y"}) == {"a": {"first": "x"}, "b": {"text": "x y"}}


def test_connect_refuses_incompatible_sockets_naming_both_ends_and_types() -> None:
    pipeline = two(Counter(), Upper(), ("counter", "upper"))
    with pytest.raises(ComponentError) as caught:
        pipeline.connect("counter.value", "upper.text")
    message = str(caught.value)
    assert "'counter.value' (int)" in message and "'upper.text' (str)" in message
    assert "not compatible" in message and "Counter" in message and "Upper" in message
    pipeline.add_component("concat", Concat())
    with pytest.raises(ComponentError, match=r"no output fits an input by type.*'counter.value' \(int\)"):
        pipeline.connect("counter", "concat")


@pytest.mark.parametrize(
    ("sender", "receiver", "match"),
    [
        ("nope.text", "b.text", "component named 'nope' not found in the pipeline"),
        ("a.text", "nope", "component named 'nope' not found in the pipeline"),
        ("a.nope", "b.text", r"'a' \(Upper\) has no output socket 'nope'. Its output sockets: 'text'"),
        ("a.text", "b.nope", r"'b' \(Upper\) has no input socket 'nope'. Its input sockets: 'text'"),
        ("a.text.x", "b", "is not of the form"),
        ("a.", "b", "is not of the form"),
        ("", "b", "is not of the form"),
    ],
)
def test_connect_refuses_unknown_names(sender: str, receiver: str, match: str) -> None:
    with pytest.raises(ComponentError, match=match):
        two(Upper(), Upper()).connect(sender, receiver)


def test_an_input_accepts_one_sender_and_reconnecting_is_a_no_op() -> None:
    pipeline = Pipeline()
    for name in ("a", "b", "c"):
        pipeline.add_component(name, Upper())
    pipeline.add_component("concat", Concat())
    pipeline.connect("a.text", "concat.left")
    pipeline.connect("a.text", "concat.left")
    assert len(pipeline.to_dict()["connections"]) == 1
    with pytest.raises(
        ComponentError, match=r"'b\.text' to 'concat\.left': that input already receives from 'a\.text'"
    ):
        pipeline.connect("b.text", "concat.left")
    pipeline.connect("b", "concat")  # left is taken: right is the only free input
    pipeline.connect("a", "concat")  # every input is taken, but this connection exists: a no-op
    assert pipeline.to_dict()["connections"] == [
        {"sender": "a.text", "receiver": "concat.left"},
        {"sender": "b.text", "receiver": "concat.right"},
    ]
    with pytest.raises(ComponentError, match="every input of 'concat' that fits already has a sender"):
        pipeline.connect("c", "concat")


def test_inputs_and_outputs_describe_the_unconnected_sockets() -> None:
    pipeline = two(Upper(), Greeter(), ("upper", "greeter"))
    pipeline.connect("upper.text", "greeter.title")
    assert pipeline.inputs() == {
        "upper": {"text": {"type": str, "is_mandatory": True}},
        "greeter": {"name": {"type": str, "is_mandatory": True}},
    }
    assert pipeline.outputs() == {"greeter": {"text": {"type": str}}}


# ---- run data -------------------------------------------------------------------------------------------


def test_flat_data_goes_to_every_unconnected_input_of_that_name() -> None:
    pipeline = Pipeline()
    pipeline.add_component("a", Upper())
    pipeline.add_component("b", Upper(suffix="!"))
    pipeline.add_component("c", Upper(suffix="?"))
    pipeline.connect("a.text", "c.text")
    result = pipeline.run({"text": "hi"})
    assert result == {"b": {"text": "HI!"}, "c": {"text": "HI?"}}
    assert pipeline.get_component("c").calls == [{"text": "HI"}]  # c.text is connected: no flat value for it


def test_nested_and_mixed_data() -> None:
    pipeline = two(Upper(), Concat(), ("upper", "concat"))
    pipeline.connect("upper.text", "concat.left")
    data = {"upper": {"text": "a"}, "concat": {"right": "b"}}
    frozen = copy.deepcopy(data)
    assert pipeline.run(data) == {"concat": {"text": "Ab"}}
    assert data == frozen  # not modified
    assert pipeline.run({"text": "a", "concat": {"right": "c"}}) == {"concat": {"text": "Ac"}}


def test_nested_values_win_over_flat_ones() -> None:
    pipeline = two(Upper(), Upper(suffix="!"))
    assert pipeline.run({"text": "x", "b": {"text": "y"}}) == {"a": {"text": "X"}, "b": {"text": "Y!"}}


def test_a_flat_key_no_unconnected_input_has_is_refused() -> None:
    pipeline = two(Upper(), Upper())
    pipeline.connect("a", "b")
    with pytest.raises(ConfigurationError, match=r"Run data key 'query' .*Unconnected inputs: 'text'"):
        pipeline.run({"text": "x", "query": "y"})
    with pytest.raises(ConfigurationError, match="Run data key 'nope'"):
        pipeline.run({"nope": {"text": "x"}})  # not a component: a flat key


def test_nested_data_naming_an_unknown_or_connected_input_is_refused() -> None:
    pipeline = two(Upper(), Upper())
    pipeline.connect("a", "b")
    with pytest.raises(ConfigurationError, match=r"Run data for 'a' \(Upper\) names input 'txt'.*inputs: 'text'"):
        pipeline.run({"a": {"txt": "x"}})
    with pytest.raises(ConfigurationError, match=r"'b\.text', but that input is connected: it receives from 'a\.text'"):
        pipeline.run({"a": {"text": "x"}, "b": {"text": "y"}})


def test_run_data_must_be_a_mapping() -> None:
    with pytest.raises(ConfigurationTypeError, match="must be a dict"):
        Pipeline().run(["text"])  # type: ignore[arg-type]


def test_missing_mandatory_inputs_are_named_before_anything_runs() -> None:
    pipeline = two(Upper(), Concat(), ("upper", "concat"))
    pipeline.connect("upper.text", "concat.left")
    with pytest.raises(ConfigurationError) as caught:
        pipeline.run({"upper": {"text": "x"}})
    assert "'concat.right' (str) of 'concat' (Concat)" in str(caught.value)
    assert pipeline.get_component("upper").calls == []


def test_optional_inputs_that_are_missing_get_their_defaults_dynamic_sockets_included() -> None:
    template = Template(["topic", "tone"])
    pipeline = Pipeline()
    pipeline.add_component("template", template)
    assert pipeline.run({"topic": "cats"}) == {"template": {"text": "tone=? topic=cats"}}
    assert template.received == {"topic": "cats", "tone": "?"}


# ---- run semantics ----------------------------------------------------------------------------------------


def test_outputs_nobody_consumes_are_returned_and_include_outputs_from_adds_the_rest() -> None:
    pipeline = two(Words(), Joiner())
    pipeline.connect("a.words", "b.words")
    assert pipeline.run({"text": "x y"}) == {"a": {"first": "x"}, "b": {"text": "x y"}}
    full = pipeline.run({"text": "x y"}, include_outputs_from={"a"})
    assert full == {"a": {"first": "x", "words": ["x", "y"]}, "b": {"text": "x y"}}
    assert pipeline.run({"text": "x y"}, include_outputs_from="a")["a"]["words"] == ["x", "y"]
    with pytest.raises(ConfigurationError, match=r"include_outputs_from names \['c'\]"):
        pipeline.run({"text": "x"}, include_outputs_from=["c"])


def test_a_router_s_untaken_branch_never_fires() -> None:
    pipeline = Pipeline()
    pipeline.add_component("router", Threshold(10))
    pipeline.add_component("small", Counter())
    pipeline.add_component("large", Counter())
    pipeline.connect("router.below", "small.value")
    pipeline.connect("router.above", "large.value")
    assert pipeline.run({"value": 3}) == {"small": {"value": 4}}
    assert pipeline.get_component("large").runs == 0
    assert pipeline.run({"value": 30}) == {"large": {"value": 31}}


def test_a_component_waits_for_an_optional_connected_input_that_is_on_its_way() -> None:
    greeter = Greeter()
    pipeline = Pipeline()
    pipeline.add_component("greeter", greeter)  # added first: it must still wait for the title
    pipeline.add_component("upper", Upper())
    pipeline.connect("upper.text", "greeter.title")
    assert pipeline.run({"name": "Ada", "text": "dr"}) == {"greeter": {"text": "Hello DR Ada"}}
    assert greeter.calls == [("Ada", "DR")]


def test_a_deferred_component_runs_when_its_optional_input_never_comes() -> None:
    greeter = Greeter()
    pipeline = Pipeline()
    pipeline.add_component("greeter", greeter)
    pipeline.add_component("gate", Gate())
    pipeline.connect("gate.passed", "greeter.title")
    assert pipeline.run({"name": "Ada", "text": "dr", "open": False}) == {"greeter": {"text": "Hello Ada"}}
    assert greeter.calls == [("Ada", None)]
    assert pipeline.run({"name": "Ada", "text": "dr", "open": True}) == {"greeter": {"text": "Hello dr Ada"}}


def test_a_component_without_inputs_runs_once() -> None:
    pipeline = two(Source(), Upper())
    pipeline.connect("a", "b")
    assert pipeline.run({}) == {"b": {"text": "FROM SOURCE"}}


def test_a_loop_runs_until_its_exit_and_keeps_the_run_data() -> None:
    pipeline = loop_pipeline(limit=3)
    result = pipeline.run({"start": {"value": 0}}, include_outputs_from=["counter"])
    assert result == {"threshold": {"above": 3}, "counter": {"value": 3}}
    assert pipeline.get_component("start").seen == [(0, None), (0, 1), (0, 2)]


def test_a_loop_beyond_its_visit_limit_raises_naming_the_component() -> None:
    pipeline = loop_pipeline(limit=1000, max_runs=2)
    with pytest.raises(PipelineMaxComponentRuns, match=r"'start' \(LoopStart\) would run more than") as caught:
        pipeline.run({"value": 0})
    assert caught.value.component_name == "start"
    assert isinstance(caught.value, PipelineError)
    assert pipeline.get_component("counter").runs == 2


def test_a_self_loop_is_a_cycle_too() -> None:
    pipeline = Pipeline(max_runs_per_component=5)
    pipeline.add_component("start", LoopStart())
    pipeline.connect("start.value", "start.feedback")
    with pytest.raises(PipelineMaxComponentRuns, match="'start'"):
        pipeline.run({"value": 1})


def test_a_failing_component_is_named_and_its_error_chained() -> None:
    pipeline = two(Upper(), Failing(), ("upper", "lookup"))
    pipeline.connect("upper", "lookup")
    with pytest.raises(PipelineError, match=r"Component 'lookup' \(Failing\) failed: KeyError") as caught:
        pipeline.run({"text": "x"})
    assert caught.value.component_name == "lookup"
    assert isinstance(caught.value.__cause__, KeyError)


def test_a_component_returning_no_dict_is_named() -> None:
    pipeline = Pipeline()
    pipeline.add_component("odd", NotADict())
    with pytest.raises(PipelineError, match=r"'odd' \(NotADict\) returned a list; run\(\) must return a dict"):
        pipeline.run({"text": "x"})


def test_warm_up_happens_on_the_first_run_only_and_again_after_an_add() -> None:
    first, second = WarmCounter(), WarmCounter()
    pipeline = Pipeline()
    pipeline.add_component("first", first)
    pipeline.run({"text": "x"})
    pipeline.run({"text": "y"})
    assert first.warm_ups == 1
    pipeline.add_component("second", second)
    pipeline.run({"text": "z"})
    assert (first.warm_ups, second.warm_ups) == (2, 1)  # components' warm_up is idempotent by contract


def test_a_failing_warm_up_is_named() -> None:
    pipeline = Pipeline()
    pipeline.add_component("model", BrokenWarmUp())
    with pytest.raises(PipelineError, match=r"'model' \(BrokenWarmUp\) failed to warm up: OSError") as caught:
        pipeline.run({"text": "x"})
    assert caught.value.component_name == "model"


def test_repr_lists_components_and_connections() -> None:
    pipeline = two(Upper(), Upper())
    pipeline.connect("a", "b")
    assert repr(pipeline) == "Pipeline(components=['a', 'b'], connections=[\"'a.text' -> 'b.text'\"])"


def test_a_deep_copy_is_an_independent_pipeline() -> None:
    original = loop_pipeline(limit=3)
    clone = copy.deepcopy(original)
    assert clone.run({"value": 0}) == {"threshold": {"above": 3}}
    assert clone.get_component("counter").runs == 3 and original.get_component("counter").runs == 0
    with pytest.raises(ComponentError, match="already in another pipeline as 'counter'"):
        Pipeline().add_component("counter", clone.get_component("counter"))


# ---- include_outputs_from in a loop, components left waiting, run-data errors ---------------------------------


def test_include_outputs_from_gives_exactly_the_last_run_s_outputs_in_a_loop() -> None:
    pipeline = loop_pipeline(limit=3)  # threshold returns {"below": 1}, {"below": 2}, then {"above": 3}
    result = pipeline.run({"start": {"value": 0}}, include_outputs_from=["start", "threshold"])
    assert result == {"start": {"value": 2}, "threshold": {"above": 3}}  # no "below" left over from run 2


def router_into_pair() -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("router", Threshold(10))
    pipeline.add_component("pair", Pair())
    pipeline.connect("router.below", "pair.a")
    pipeline.connect("router.above", "pair.b")
    return pipeline


def _waiting(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "handrail.core" and r.levelno == logging.WARNING]


def test_a_component_left_waiting_for_a_mandatory_input_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = router_into_pair()
    with caplog.at_level(logging.WARNING, logger="handrail.core"):
        assert pipeline.run({"value": 3}) == {}
    assert _waiting(caplog) == [
        "Component 'pair' (Pair) never ran: it received 'a', but its mandatory input(s) 'pair.b' (from "
        "'router.above') never arrived. A router that sends to only some of them, or a loop without an entry, "
        "leaves it waiting."
    ]
    assert pipeline.get_component("pair").runs == 0


def test_a_component_feeding_its_own_mandatory_input_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = Pipeline()
    pipeline.add_component("a", Upper())
    pipeline.connect("a.text", "a.text")  # allowed (self-loops are), but this one can never start
    with caplog.at_level(logging.WARNING, logger="handrail.core"):
        assert pipeline.run({}) == {}
    (message,) = _waiting(caplog)
    assert re.search(
        r"'a' \(Upper\) never ran: it received nothing, but its mandatory "
        r"input\(s\) 'a\.text' \(from 'a\.text'\) never arrived\. An input fed by 'a' itself",
        message,
    )
    caplog.clear()
    pipeline = Pipeline()
    pipeline.add_component("c", Concat())
    pipeline.connect("c.text", "c.left")
    with caplog.at_level(logging.WARNING, logger="handrail.core"):
        assert pipeline.run({"right": "x"}) == {}
    (message,) = _waiting(caplog)
    assert re.search(r"'c' \(Concat\) never ran: it received 'right', but .*'c\.left'", message)


def test_a_loop_without_an_entry_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    pipeline = two(Upper(), Upper())
    pipeline.connect("a", "b")
    pipeline.connect("b", "a")
    with caplog.at_level(logging.WARNING, logger="handrail.core"):
        assert pipeline.run({}) == {}
    assert [m[:34] for m in _waiting(caplog)] == [
        "Component 'a' (Upper) never ran: i",
        "Component 'b' (Upper) never ran: i",
    ]


def test_an_untaken_branch_is_not_logged_even_with_run_data(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="handrail.core")
    pipeline = Pipeline()
    pipeline.add_component("gate", Gate())
    pipeline.add_component("concat", Concat())
    pipeline.connect("gate.passed", "concat.left")
    assert pipeline.run({"text": "x", "open": False, "right": "y"}) == {}  # concat got run data only: silent
    assert pipeline.run({"text": "x", "open": True, "right": "y"}) == {"concat": {"text": "xy"}}
    assert _waiting(caplog) == []


def test_a_component_s_value_must_be_a_dict_of_its_inputs() -> None:
    pipeline = two(Upper(), Upper())
    pipeline.connect("a", "b")
    with pytest.raises(
        ConfigurationTypeError,
        match=r"Run data for component 'a' \(Upper\) must be a dict of its "
        r"inputs, e\.g\. \{'a': \{'text': value\}\}, got int\. Its inputs: 'text'\.",
    ):
        pipeline.run({"a": 1})


def test_a_component_name_that_is_also_an_unconnected_input_takes_a_flat_value() -> None:
    pipeline = two(Upper(), Upper(), ("text", "other"))
    assert pipeline.run({"text": "x"}) == {"text": {"text": "X"}, "other": {"text": "X"}}


def test_a_run_data_key_that_is_no_string_is_named() -> None:
    with pytest.raises(ConfigurationTypeError, match=r"keys must be strings .*got the key 1 \(int\)"):
        two(Upper(), Upper()).run({1: 2})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("include", "match"),
    [(5, r"include_outputs_from must be a component name or an iterable .*got int"), ([1], r"got 1 \(int\)")],
)
def test_include_outputs_from_of_the_wrong_type_is_named(include: Any, match: str) -> None:
    with pytest.raises(ConfigurationTypeError, match=match):
        two(Upper(), Upper()).run({"text": "x"}, include_outputs_from=include)


def test_a_deep_copy_of_an_agent_or_a_pipeline_gets_its_own_warm_up_lock_and_runs() -> None:
    from handrail.components.agents import Agent
    from handrail.dataclasses import ChatMessage
    from handrail.testing import ScriptedChatGenerator

    agent = Agent(chat_generator=ScriptedChatGenerator([ChatMessage.from_assistant("hi")]))
    pipeline = Pipeline()
    pipeline.add_component("agent", agent)
    for original, copied in ((agent, copy.deepcopy(agent)), (pipeline, copy.deepcopy(pipeline))):
        assert copied._warm_lock is not original._warm_lock
        assert "_warm_lock" not in copied.__getstate__()
    copied_agent = copy.deepcopy(agent)
    assert copied_agent.run([ChatMessage.from_user("x")])["last_message"].text == "hi"


def test_connection_type_validation_is_haystack_s_switch_and_only_true_is_taken() -> None:
    assert Pipeline(None, 100, True).max_runs_per_component == 100  # Haystack's positional call binds
    with pytest.raises(ConfigurationError, match="connection_type_validation=False is not supported"):
        Pipeline(connection_type_validation=False)
    loaded = Pipeline.from_dict({"components": {}, "connections": [], "connection_type_validation": True})
    assert loaded.to_dict()["components"] == {}
    with pytest.raises(SerializationError, match="connection_type_validation"):
        Pipeline.from_dict({"components": {}, "connections": [], "connection_type_validation": False})


def test_an_unknown_key_of_a_haystack_file_points_to_load_haystack() -> None:
    data = {"components": {"r": {"type": "haystack.components.routers.ConditionalRouter"}}, "connections": [], "x": 1}
    with pytest.raises(SerializationError, match="load_haystack"):
        Pipeline.from_dict(data)
