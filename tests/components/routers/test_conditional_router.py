"""ConditionalRouter on its own: rendering modes, routing, sockets, errors, the sandbox, serialization."""

# The typing aliases (List, Optional) are what several of these tests are about: keep them.
# ruff: noqa: UP006, UP035, UP045

from __future__ import annotations

import copy
import logging
import subprocess
import sys
from typing import Any, List, Optional

import pytest
from jinja2.exceptions import SecurityError, UndefinedError

from handrail.components.routers import ConditionalRouter, NoRouteSelectedException, RouteConditionException
from handrail.core.component import MISSING, input_sockets, is_component, output_sockets, types_compatible
from handrail.core.serialization import restricted_imports
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.errors import ComponentError, ConfigurationTypeError, RunError, SerializationError


def shout(text: str) -> str:
    """A custom filter, module level so that it serializes."""
    return text.upper() + "!"


STREAM_ROUTES = [
    {
        "condition": "{{streams|length > 2}}",
        "output": "{{streams}}",
        "output_name": "enough_streams",
        "output_type": list[int],
    },
    {
        "condition": "{{streams|length <= 2}}",
        "output": "{{streams}}",
        "output_name": "insufficient_streams",
        "output_type": list[int],
    },
]

REPLY_ROUTES = [
    {
        "condition": "{{replies[0].tool_calls | length > 0}}",
        "output": "{{replies}}",
        "output_name": "there_are_tool_calls",
        "output_type": List[ChatMessage],
    },
    {
        "condition": "{{replies[0].tool_calls | length == 0}}",
        "output": "{{replies}}",
        "output_name": "final_replies",
        "output_type": List[ChatMessage],
    },
]


def route(condition: str, output: Any, name: Any = "out", output_type: Any = Any) -> dict[str, Any]:
    return {"condition": condition, "output": output, "output_name": name, "output_type": output_type}


def one_route(output: str, *, output_type: Any = Any, **kwargs: Any) -> ConditionalRouter:
    return ConditionalRouter([route("{{ true }}", output, "out", output_type)], **kwargs)


# --------------------------------------------------------------------------- routing


def test_the_first_route_whose_condition_holds_gives_the_outputs():
    router = ConditionalRouter(STREAM_ROUTES)

    assert router.run(streams=[1, 2, 3]) == {"enough_streams": [1, 2, 3]}
    assert router.run(streams=[1]) == {"insufficient_streams": [1]}


def test_routes_are_tried_in_order_and_only_the_first_true_one_fires():
    router = ConditionalRouter([route("{{ x > 0 }}", "first", "a"), route("{{ x > 1 }}", "second", "b")])

    assert router.run(x=5) == {"a": "first"}
    assert router.run(x=0.5) == {"a": "first"}


def test_extra_inputs_are_accepted_and_ignored():
    assert ConditionalRouter(STREAM_ROUTES).run(streams=[1, 2, 3], query="Haystack") == {"enough_streams": [1, 2, 3]}


def test_no_matching_route_raises_naming_the_routes():
    router = ConditionalRouter(STREAM_ROUTES)

    with pytest.raises(NoRouteSelectedException) as info:
        ConditionalRouter([route("{{ streams|length > 5 }}", "{{streams}}", "many")]).run(streams=[1])

    assert isinstance(info.value, RunError)
    assert "route 0 ('many')" in str(info.value)
    assert "{{ streams|length > 5 }}" in str(info.value)
    assert "streams=list[int] of 1" in str(info.value)
    assert router.run(streams=[]) == {"insufficient_streams": []}


def test_a_missing_mandatory_input_is_named():
    with pytest.raises(ConfigurationTypeError, match=r"\['streams'\]"):
        ConditionalRouter(STREAM_ROUTES).run(query="no streams")


# --------------------------------------------------------------------------- text and native rendering


def test_text_rendering_turns_literals_into_python_values():
    assert one_route("{{ x }}").run(x=[1, 2]) == {"out": [1, 2]}
    assert one_route("{{ x|length }}").run(x="abc") == {"out": 3}
    assert one_route("{{ {'k': x} }}").run(x=1.5) == {"out": {"k": 1.5}}
    assert one_route("{{ x }}").run(x=None) == {"out": None}


def test_text_rendering_keeps_non_literals_as_strings():
    assert one_route("{{ x }}").run(x="hello world") == {"out": "hello world"}
    assert one_route("{{ x }} and more").run(x=[1]) == {"out": "[1] and more"}


def test_quoting_the_template_forces_a_string():
    assert one_route("'{{ x|length }}'").run(x="abc") == {"out": "3"}


def test_text_rendering_turns_objects_into_their_text():
    replies = [ChatMessage.from_assistant("hi")]

    result = ConditionalRouter(REPLY_ROUTES).run(replies=replies)

    assert isinstance(result["final_replies"], str)
    assert result["final_replies"].startswith("[ChatMessage(")


def test_native_rendering_passes_the_objects_themselves():
    replies = [ChatMessage.from_assistant("hi")]
    calls = [ChatMessage.from_assistant(tool_calls=[ToolCall("weather", {"location": "Berlin"}, id="c1")])]
    router = ConditionalRouter(REPLY_ROUTES, unsafe=True)

    assert router.run(replies=replies)["final_replies"] is replies
    assert router.run(replies=calls)["there_are_tool_calls"] is calls


def test_native_rendering_still_turns_literal_text_into_values():
    assert one_route("{{ x }}", unsafe=True).run(x="[1, 2]") == {"out": [1, 2]}
    assert one_route("{{ x|length }}", unsafe=True).run(x="abc") == {"out": 3}
    assert one_route("{{ x }} items", unsafe=True).run(x=2) == {"out": "2 items"}


def test_text_mode_conditions_must_render_a_literal():
    with pytest.raises(RouteConditionException, match=r"route 0 \('out'\).*rendered 'hello'.*x=str"):
        ConditionalRouter([route("{{ x }}", "{{ x }}")]).run(x="hello")


def test_native_mode_conditions_use_truthiness():
    router = ConditionalRouter([route("{{ x }}", "yes", "a"), route("{{ not x }}", "no", "b")], unsafe=True)

    assert router.run(x=[0]) == {"a": "yes"}
    assert router.run(x=[]) == {"b": "no"}


# --------------------------------------------------------------------------- several outputs, sockets


def test_a_route_may_have_several_outputs():
    routes = [
        route(
            "{{ query|length > 3 }}",
            ["{{ query }}", "{{ query|length }}"],
            ["long_query", "length"],
            [str, int],
        ),
        route("{{ true }}", ["{{ query }}"], ["short_query"], [str]),
    ]
    router = ConditionalRouter(routes)

    assert router.run(query="weather") == {"long_query": "weather", "length": 7}
    assert router.run(query="hi") == {"short_query": "hi"}
    assert {n: s.type for n, s in output_sockets(router).items()} == {
        "long_query": str,
        "length": int,
        "short_query": str,
    }


def test_input_sockets_are_the_template_variables():
    routes = [
        route("{{ a > 1 and range(3)|length == 3 }}", "{% for m in items %}{{ m }}{% endfor %}", "x"),
        route("{{ true }}", "{{ b }}", "y"),
    ]
    router = ConditionalRouter(routes)

    sockets = input_sockets(router)
    assert sorted(sockets) == ["a", "b", "items"]
    assert all(s.is_mandatory and s.type is Any for s in sockets.values())
    assert is_component(router)


def test_typing_aliases_become_builtin_generics_on_the_sockets():
    router = ConditionalRouter(REPLY_ROUTES, unsafe=True)

    sockets = output_sockets(router)
    assert sockets["there_are_tool_calls"].type == list[ChatMessage]
    assert sockets["final_replies"].type == list[ChatMessage]
    assert types_compatible(sockets["final_replies"].type, List[ChatMessage])
    assert ConditionalRouter([route("{{ x }}", "{{ x }}", "o", Optional[List[int]])]).run(x=1) == {"o": 1}
    assert output_sockets(ConditionalRouter([route("{{ x }}", "{{ x }}", "o", Optional[List[int]])]))["o"].type == (
        list[int] | None
    )


def test_two_routes_may_share_an_output_name_of_one_type():
    router = ConditionalRouter([route("{{ x > 0 }}", "pos", "sign", str), route("{{ true }}", "neg", "sign", str)])

    assert router.run(x=-1) == {"sign": "neg"}
    assert list(output_sockets(router)) == ["sign"]


# --------------------------------------------------------------------------- optional variables


def test_optional_variables_default_to_none():
    routes = [
        route("{{ path == 'followup_short' }}", "{{ question }}", "followup_short", str),
        route("{{ path == 'followup_elaborate' }}", "{{ question }}", "followup_elaborate", str),
        route("{{ path is none }}", "{{ question }}", "default", str),
    ]
    router = ConditionalRouter(routes, optional_variables=["path"])

    sockets = input_sockets(router)
    assert sockets["path"].default is None and not sockets["path"].is_mandatory
    assert sockets["question"].default is MISSING and sockets["question"].is_mandatory
    assert router.run(question="why?") == {"default": "why?"}
    assert router.run(question="why?", path="followup_short") == {"followup_short": "why?"}


def test_an_optional_variable_no_route_reads_is_warned_about(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="handrail.components.routers"):
        router = ConditionalRouter(STREAM_ROUTES, optional_variables=["pth"])
    [record] = [r for r in caplog.records if r.name == "handrail.components.routers"]
    assert record.levelno == logging.WARNING
    assert "['pth']" in record.getMessage()
    assert "not used in any route" in record.getMessage()

    assert "pth" not in input_sockets(router)
    assert router.run(streams=[1]) == {"insufficient_streams": [1]}


# --------------------------------------------------------------------------- rendering errors and the sandbox


def test_a_condition_that_fails_to_render_names_the_route_and_the_variable():
    routes = [route("{{ x is none }}", "none", "nothing"), route("{{ replies[0].text|length > 0 }}", "{{ x }}", "b")]
    router = ConditionalRouter(routes, optional_variables=["x"])

    with pytest.raises(RouteConditionException) as info:
        router.run(replies=[], x=1)

    message = str(info.value)
    assert "route 1 ('b')" in message
    assert "condition template '{{ replies[0].text|length > 0 }}'" in message
    assert "replies=list" in message
    assert info.value.route_index == 1
    assert info.value.output_names == ("b",)
    assert isinstance(info.value.__cause__, UndefinedError)


def test_an_output_that_fails_to_render_names_the_route_and_the_output():
    router = ConditionalRouter([route("{{ true }}", ["{{ x }}", "{{ x.missing }}"], ["ok", "bad"], [Any, Any])])

    with pytest.raises(RouteConditionException, match=r"route 0 \('ok', 'bad'\).*output 'bad'.*missing.*x=dict"):
        router.run(x={})


def test_an_error_raised_by_a_filter_is_wrapped_with_the_route():
    with pytest.raises(RouteConditionException, match=r"route 0.*AttributeError") as info:
        one_route("{{ x|shout }}", custom_filters={"shout": shout}).run(x=3)

    assert isinstance(info.value.__cause__, AttributeError)


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ x.__class__ }}",
        "{{ x._content }}",
        "{{ x.__init__.__globals__ }}",
    ],
)
def test_the_sandbox_refuses_unsafe_attributes_even_when_unsafe(template, unsafe):
    with pytest.raises(RouteConditionException, match="unsafe") as info:
        one_route(template, unsafe=unsafe).run(x=ChatMessage.from_user("hi"))

    assert isinstance(info.value.__cause__, SecurityError)


@pytest.mark.parametrize("unsafe", [False, True])
def test_the_sandbox_also_guards_conditions(unsafe):
    router = ConditionalRouter([route("{{ x.__class__ is none }}", "{{ x }}")], unsafe=unsafe)

    with pytest.raises(RouteConditionException, match=r"condition.*unsafe"):
        router.run(x=1)


@pytest.mark.parametrize("unsafe", [False, True])
def test_undefined_values_never_leak_out(unsafe):
    with pytest.raises(RouteConditionException, match="missing"):
        one_route("{{ [x.missing] }}", unsafe=unsafe).run(x={})


def test_custom_filters_are_available():
    assert one_route("{{ x|shout }}", custom_filters={"shout": shout}).run(x="hey") == {"out": "HEY!"}


# --------------------------------------------------------------------------- validate_output_type


def test_validate_output_type_accepts_fitting_values():
    routes = [route("{{ true }}", ["{{ x }}", "{{ y }}", "{{ z }}"], ["a", "b", "c"], [list[int], Optional[str], dict])]
    router = ConditionalRouter(routes, validate_output_type=True, unsafe=True)

    assert router.run(x=[1, 2], y=None, z={"k": 1}) == {"a": [1, 2], "b": None, "c": {"k": 1}}


@pytest.mark.parametrize(
    ("output_type", "value"),
    [(int, "text"), (list[int], ["a"]), (dict[str, int], {"k": "v"}), (tuple[int, str], (1, 2)), (str, None)],
)
def test_validate_output_type_refuses_values_that_do_not_fit(output_type, value):
    router = one_route("{{ x }}", output_type=output_type, validate_output_type=True, unsafe=True)

    with pytest.raises(RouteConditionException, match=r"route 0 \('out'\).*not of output_type"):
        router.run(x=value)


def test_validate_output_type_catches_objects_rendered_as_text():
    router = ConditionalRouter(REPLY_ROUTES, validate_output_type=True)

    with pytest.raises(RouteConditionException, match=r"route 1 \('final_replies'\).*rendered a str"):
        router.run(replies=[ChatMessage.from_assistant("hi")])


def test_without_validation_the_value_is_passed_as_rendered():
    assert one_route("{{ x }}", output_type=int).run(x="text") == {"out": "text"}


# --------------------------------------------------------------------------- bad routes


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        ([{"condition": "{{ x }}", "output": "{{ x }}", "output_name": "o"}], r"route 0.*missing \['output_type'\]"),
        ([route("{{ x }}", "{{ x }}") | {"outputs": "y"}], r"route 0.*unknown \['outputs'\]"),
        ([route("{{ x }}", ["{{ x }}", "{{ x }}"], ["a"], [int, int])], r"route 0.*'output_name' must be a list of 2"),
        ([route("{{ x }}", ["{{ x }}"], ["a"], int)], r"route 0.*'output_type' must be a list of 1"),
        ([route("{{ x }}", "{{ x }}", ["a"], int)], r"route 0.*'output_name' is a list"),
        ([route("{{ x }}", "{{ x }}", "a", "int")], r"route 0.*output_type of 'a' must be a type"),
        ([route("{{ x }}", "{{ x }}", "not a name")], r"route 0.*identifier"),
        ([route("{{ x }}", "{{ x }}"), route("", "{{ x }}")], r"route 1.*'condition'"),
        ([route("{{ x }}", ["{{ x }}", "{{ x }}"], ["a", "a"], [int, int])], r"route 0.*repeat"),
        ([route("{{ x }}", "{{ x", "a")], r"route 0 \('a'\).*output 'a'.*does not parse"),
        ([route("{{ x ) }}", "{{ x }}", "a")], r"route 0 \('a'\).*condition.*does not parse"),
        ([route("{{ x }}", "1", "a", int), route("{{ x }}", "{{ x }}", "a", str)], r"route 1 \('a'\).*route 0"),
        ([], "at least one route"),
    ],
)
def test_bad_routes_are_refused_naming_the_route(routes, message):
    with pytest.raises(ComponentError, match=message):
        ConditionalRouter(routes)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"routes": {"condition": "{{ x }}"}},
        {"routes": ["{{ x }}"]},
        {"routes": STREAM_ROUTES, "custom_filters": {"f": "not callable"}},
        {"routes": STREAM_ROUTES, "optional_variables": "streams"},
    ],
)
def test_arguments_of_the_wrong_type_are_refused(kwargs):
    with pytest.raises(ConfigurationTypeError):
        ConditionalRouter(**kwargs)


# --------------------------------------------------------------------------- serialization


def test_to_dict_writes_types_and_filters_as_paths():
    router = ConditionalRouter(
        REPLY_ROUTES, custom_filters={"shout": shout}, unsafe=True, validate_output_type=True, optional_variables=[]
    )

    data = router.to_dict()

    assert data["type"] == "handrail.components.routers.conditional_router.ConditionalRouter"
    params = data["init_parameters"]
    assert params["routes"][0] == {
        "condition": "{{replies[0].tool_calls | length > 0}}",
        "output": "{{replies}}",
        "output_name": "there_are_tool_calls",
        "output_type": "list[handrail.dataclasses.chat_message.ChatMessage]",
    }
    assert params["custom_filters"] == {"shout": f"{__name__}.shout"}
    assert (params["unsafe"], params["validate_output_type"], params["optional_variables"]) == (True, True, [])


def test_round_trip_keeps_behaviour_and_sockets():
    routes = [route("{{ q|length > 1 }}", ["{{ q|shout }}", "{{ n }}"], ["loud", "n"], [str, Optional[int]])]
    router = ConditionalRouter(routes, custom_filters={"shout": shout}, optional_variables=["n"])
    data = router.to_dict()
    frozen = copy.deepcopy(data)

    rebuilt = ConditionalRouter.from_dict(data)

    assert data == frozen
    assert rebuilt.to_dict() == data
    assert rebuilt.run(q="hey") == {"loud": "HEY!", "n": None}
    assert output_sockets(rebuilt) == output_sockets(router)
    assert input_sockets(rebuilt) == input_sockets(router)


def test_typing_aliases_and_builtin_generics_serialize_alike():
    alias = ConditionalRouter(REPLY_ROUTES, unsafe=True).to_dict()
    builtin_routes = [dict(r, output_type=list[ChatMessage]) for r in REPLY_ROUTES]

    assert alias == ConditionalRouter(builtin_routes, unsafe=True).to_dict()
    rebuilt = ConditionalRouter.from_dict(alias)
    assert output_sockets(rebuilt)["final_replies"].type == list[ChatMessage]
    replies = [ChatMessage.from_assistant("done")]
    assert rebuilt.run(replies=replies) == {"final_replies": replies}


def test_from_dict_respects_an_import_allowlist():
    data = one_route("{{ x|shout }}", custom_filters={"shout": shout}).to_dict()

    with restricted_imports(()), pytest.raises(SerializationError, match="allowlist"):
        ConditionalRouter.from_dict(data)
    with restricted_imports(("tests",)):
        assert ConditionalRouter.from_dict(data).run(x="a") == {"out": "A!"}


def test_lambdas_cannot_be_serialized():
    router = one_route("{{ x|f }}", custom_filters={"f": lambda v: v})

    with pytest.raises(SerializationError, match="lambda"):
        router.to_dict()


# --------------------------------------------------------------------------- public surface


def test_the_routers_package_exports_exactly_all():
    import handrail.components.routers as routers
    from handrail.components.routers import conditional_router

    assert sorted(routers.__all__) == ["ConditionalRouter", "NoRouteSelectedException", "RouteConditionException"]
    for name in routers.__all__:
        assert getattr(routers, name) is getattr(conditional_router, name)
    assert issubclass(RouteConditionException, RunError)
    assert issubclass(NoRouteSelectedException, RunError)


def test_jinja2_loads_only_when_a_router_is_built():
    code = (
        "import sys; import handrail.components.routers as r; from handrail import Agent; "
        "assert 'jinja2' not in sys.modules, 'imported early'; "
        "r.ConditionalRouter([{'condition': '{{ x }}', 'output': '1', 'output_name': 'o', 'output_type': int}]); "
        "assert 'jinja2' in sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "template",
    [
        "{{ 'a' * 1000000000 }}",
        "{{ [0] * 10 ** 7 }}",
        "{{ 10 ** 100000000 }}",
        "{% set a = 'a' * 1000000 %}{% set a = a + a %}{{ a|length }}",
        "{{ (['a' * 1000000] * 1000)|join|length }}",
        "{{ ('a'|center(1000000000))|length }}",
        "{{ ('a'.rjust(1000000000))|length }}",
        "{{ ('%01000000000d' % 1)|length }}",
        "{{ ('{:>1000000000}'.format(1))|length }}",
        "{% set a = 10 ** 25000 %}{% set b = a * a %}{% set c = b * b %}{% set d = c * c %}{{ 1 }}",
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}x",
        "{{ ('{:{}}'.format('a', 300000000))|length }}",
        "{{ ('%*d' % (300000000, 1))|length }}",
        "{{ '{x:{w}}'.format(x='a', w=300000000)|length }}",
        "{% set a = 'a' * 1000 %}{{ (a|replace('a', a * 300))|length }}",
        "{% set a = 'a' * 1000000 %}{{ a.replace('a', 'bb')|length }}",
    ],
)
def test_templates_cannot_build_huge_values_or_loop_for_hours(template: str) -> None:
    router = ConditionalRouter(
        [{"condition": "{{ True }}", "output": template, "output_name": "o", "output_type": str}]
    )
    with pytest.raises(RouteConditionException, match="SecurityError"):
        router.run()


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("{{ 'ab' * 3 }}", "ababab"),
        ("{{ 2 ** 10 }}", 1024),
        ("{{ 1 ** 10 ** 9 }}", 1),
        ("{{ 'a' + 'b' }}", "ab"),
        ("{{ '%05d' % 3 }}", "00003"),
        ("{{ 'x'|center(5) }}", "  x  "),
        ("{{ ['a', 'b']|join('-') }}", "a-b"),
        ("{{ '{}-{}'.format('a', 2) }}", "a-2"),
        ("{{ 'abc'|replace('b', 'x') }}", "axc"),
        ("{{ '{:{}}'.format('a', 3) }}", "a  "),
        ("{{ '{} users'.format(2000000) }}", "2000000 users"),  # a big value is not a big width
        ("{{ '%s * %s' % (2000000, 3) }}", "2000000 * 3"),
        ("{% for i in range(3) %}{% for j in range(2) %}{{ i }}{% endfor %}{% endfor %}", "001122"),
    ],
)
def test_small_repetitions_and_powers_still_work(template: str, value: Any) -> None:
    router = ConditionalRouter(
        [{"condition": "{{ True }}", "output": template, "output_name": "o", "output_type": str}]
    )
    assert router.run() == {"o": value}
