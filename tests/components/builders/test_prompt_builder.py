"""PromptBuilder, checked against Haystack 2.19's behaviour (run there and recorded here)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from jinja2.exceptions import SecurityError

from handrail.components.builders import PromptBuilder
from handrail.core.component import MISSING, input_sockets, output_sockets
from handrail.core.pipeline import Pipeline
from handrail.errors import ComponentError, ConfigurationError, PipelineError


def test_renders_the_variables_given() -> None:
    builder = PromptBuilder("Hi {{ name }} {{ x.y }}", required_variables=[])
    assert builder.run(name="A", x={"y": 2}) == {"prompt": "Hi A 2"}


def test_a_variable_not_given_renders_empty() -> None:
    assert PromptBuilder("[{{ a }}]", required_variables=[]).run() == {"prompt": "[]"}


def test_run_time_template_and_template_variables_win() -> None:
    builder = PromptBuilder("Hi {{ name }}", required_variables=[])
    result = builder.run(name="A", template="T {{name}} {{other}}", template_variables={"name": "B"})
    assert result == {"prompt": "T B "}


def test_variables_are_optional_inputs_with_empty_default() -> None:
    builder = PromptBuilder("{{ b }} {{ a }}", required_variables=["a"])
    sockets = input_sockets(builder)
    assert sockets["a"].default is MISSING
    assert sockets["b"].default == ""
    assert {"template", "template_variables"} <= set(sockets)
    assert builder.variables == ["a", "b"]
    assert set(output_sockets(builder)) == {"prompt"}


def test_required_star_makes_every_variable_required() -> None:
    builder = PromptBuilder("Hi {{ name }} {{ x }}", required_variables="*")
    with pytest.raises(ValueError, match=r"Missing required input variables in PromptBuilder: x\. "):
        builder.run(name="A")
    assert all(s.default is MISSING for n, s in input_sockets(builder).items() if n in ("name", "x"))


def test_required_variable_missing_names_it() -> None:
    builder = PromptBuilder("Hi {{ name }}", required_variables=["name", "zzz"])
    with pytest.raises(ConfigurationError, match=r"zzz\. Required variables: \['name', 'zzz'\]"):
        builder.run(name="A")


def test_variables_replace_the_inferred_ones() -> None:
    builder = PromptBuilder("Hi", variables=["q"], required_variables=[])
    assert "q" in input_sockets(builder)
    assert builder.run(template="q={{ q }}", q=5) == {"prompt": "q=5"}


def test_warns_when_required_variables_is_not_set(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="handrail"):
        PromptBuilder("{{ a }} {{ b }}")
    (record,) = [r for r in caplog.records if r.name == "handrail.components.builders.prompt_builder"]
    assert record.levelno == logging.WARNING
    assert "PromptBuilder has 2 prompt variables, but `required_variables` is not set" in record.getMessage()


def test_no_warning_when_required_variables_is_given(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="handrail"):
        PromptBuilder("{{ a }}", required_variables=[])
        PromptBuilder("no variables")
    assert not caplog.records


def test_invalid_template_is_a_value_error() -> None:
    with pytest.raises(ComponentError, match="Invalid template for PromptBuilder"):
        PromptBuilder("{% if %}")
    builder = PromptBuilder("ok", required_variables=[])
    with pytest.raises(ValueError, match="Invalid template"):
        builder.run(template="{{ unclosed")


def test_sandbox_and_limits_of_the_router_apply() -> None:
    builder = PromptBuilder("{{ ''.__class__ }}|{{ x.__class__ }}", required_variables=[])
    assert builder.run(x=1) == {"prompt": "|"}  # unsafe attributes render as undefined, as in Haystack
    with pytest.raises(SecurityError, match="at most"):
        PromptBuilder("{{ 'a' * 10**9 }}", required_variables=[]).run()
    with pytest.raises(SecurityError, match="ranges of one render"):
        PromptBuilder("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}").run()


def test_to_dict_and_from_dict_round_trip() -> None:
    builder = PromptBuilder("Hi {{ name }}", required_variables="*", variables=["name", "extra"])
    data = builder.to_dict()
    assert data == {
        "type": "handrail.components.builders.prompt_builder.PromptBuilder",
        "init_parameters": {"template": "Hi {{ name }}", "variables": ["name", "extra"], "required_variables": "*"},
    }
    again = PromptBuilder.from_dict(data)
    assert again.to_dict() == data
    assert again.run(name="B", extra=1) == {"prompt": "Hi B"}


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="str template"):
        PromptBuilder(["not", "text"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="required_variables"):
        PromptBuilder("x", required_variables=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="template_variables must be a dict"):
        PromptBuilder("x", required_variables=[]).run(template_variables=["a"])  # type: ignore[arg-type]


def test_in_a_pipeline_a_missing_required_input_is_refused_before_running() -> None:
    pipeline = Pipeline()
    pipeline.add_component("prompt", PromptBuilder("Q: {{ query }} {{ extra }}", required_variables=["query"]))
    assert pipeline.run({"prompt": {"query": "why"}}) == {"prompt": {"prompt": "Q: why "}}
    with pytest.raises(ConfigurationError, match=r"'prompt\.query'"):
        pipeline.run({"prompt": {"extra": "x"}})


def test_in_a_pipeline_a_render_failure_names_the_component() -> None:
    pipeline = Pipeline()
    pipeline.add_component("prompt", PromptBuilder("{{ x.y.z }}", required_variables=[]))
    data: dict[str, Any] = {"prompt": {"x": {}}}
    with pytest.raises(PipelineError, match="'prompt'"):
        pipeline.run(data)


def test_builders_round_trip_through_pipeline_yaml() -> None:
    from handrail.components.builders import ChatPromptBuilder
    from handrail.dataclasses import ChatMessage

    pipeline = Pipeline()
    pipeline.add_component("text", PromptBuilder("Q: {{ q }}", required_variables="*"))
    pipeline.add_component("chat", ChatPromptBuilder([ChatMessage.from_user("{{ q }}?")], required_variables="*"))
    again = Pipeline.loads(pipeline.dumps())
    assert again.to_dict() == pipeline.to_dict()
    result = again.run({"q": "why"})
    assert result["text"] == {"prompt": "Q: why"}
    assert result["chat"]["prompt"][0].text == "why?"


def test_a_macro_that_recurses_without_end_stops_with_a_named_error() -> None:
    endless = PromptBuilder("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
    with pytest.raises(SecurityError, match="nest more than 100 deep"):
        endless.run()
    bounded = PromptBuilder(
        "{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}{% endmacro %}{{ f(0) }}"
    )
    assert bounded.run() == {"prompt": "40"}  # recursion within the limit still works
