from __future__ import annotations

import contextlib
import copy
import functools
import json
import os.path
import typing
from collections.abc import Callable
from typing import Any, Dict, List, Optional, Union  # noqa: UP035

import pytest

import handrail.core as core
from handrail.core.serialization import (
    default_from_dict,
    default_to_dict,
    deserialize_callable,
    deserialize_type,
    import_object,
    object_from_dict,
    object_to_dict,
    qualified_name,
    restricted_imports,
    serialize_callable,
    serialize_type,
)
from handrail.dataclasses import ChatMessage, State, ToolCall
from handrail.dataclasses.state import merge_lists
from handrail.errors import HandrailError, SerializationError

# ---- module-level fixtures importable by dotted path ------------------------------------------------------


def module_function(x: int) -> int:
    return x + 1


def _decorator(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@_decorator
def decorated_function(x: int) -> int:
    return x * 2


class Configurable:
    """Serializes through the default envelope helpers."""

    def __init__(self, name: str, items: list[Any] | None = None) -> None:
        self.name = name
        self.items = items if items is not None else []
        self.items.append("touched")  # mutates what it was given: from_dict must hand it a copy

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, name=self.name, items=[i for i in self.items if i != "touched"])

    class Nested:
        @staticmethod
        def helper() -> str:
            return "nested"

        @classmethod
        def build(cls) -> str:
            return "built"


class WithFromDict:
    """Its from_dict pops from the dict it gets: object_from_dict must hand it a copy."""

    def __init__(self, value: Any) -> None:
        self.value = value

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WithFromDict:
        params = data.pop("init_parameters")
        params["value"].append("popped")
        return cls(params["value"])


class NoToDict:
    pass


# ---- qualified_name / envelope ----------------------------------------------------------------------------


def test_qualified_name_of_a_class_and_an_instance() -> None:
    assert qualified_name(ChatMessage) == "handrail.dataclasses.chat_message.ChatMessage"
    assert qualified_name(ChatMessage.from_user("x")) == "handrail.dataclasses.chat_message.ChatMessage"
    assert qualified_name(Configurable.Nested) == f"{__name__}.Configurable.Nested"
    assert qualified_name(3) == "builtins.int"


def test_default_to_dict_builds_the_envelope() -> None:
    assert default_to_dict(Configurable("a"), name="a", items=[1]) == {
        "type": f"{__name__}.Configurable",
        "init_parameters": {"name": "a", "items": [1]},
    }


def test_default_from_dict_rebuilds_and_does_not_mutate_its_input() -> None:
    data = {"type": f"{__name__}.Configurable", "init_parameters": {"name": "n", "items": [1]}}
    before = copy.deepcopy(data)
    obj = default_from_dict(Configurable, data)
    assert isinstance(obj, Configurable)
    assert obj.name == "n"
    assert obj.items == [1, "touched"]
    assert data == before


def test_default_from_dict_accepts_a_short_type_name_or_no_type() -> None:
    assert default_from_dict(Configurable, {"type": "elsewhere.Configurable", "init_parameters": {"name": "a"}})
    assert default_from_dict(Configurable, {"init_parameters": {"name": "b"}}).name == "b"


def test_default_from_dict_refuses_missing_parameters_or_another_class() -> None:
    with pytest.raises(SerializationError, match="Missing 'init_parameters'"):
        default_from_dict(Configurable, {"type": f"{__name__}.Configurable"})
    with pytest.raises(SerializationError, match="Missing 'init_parameters'"):
        default_from_dict(Configurable, {"type": f"{__name__}.Configurable", "init_parameters": [1]})
    with pytest.raises(SerializationError, match="does not match class"):
        default_from_dict(Configurable, {"type": "x.Other", "init_parameters": {"name": "a"}})


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"name": "a", "colour": "red"}, r"unknown init parameters \['colour'\]"),
        ({}, r"missing init parameters \['name'\]"),
    ],
)
def test_default_from_dict_names_a_parameter_the_constructor_does_not_take_or_needs(
    params: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(SerializationError, match=fragment):
        default_from_dict(Configurable, {"type": f"{__name__}.Configurable", "init_parameters": params})


@pytest.mark.parametrize("value", [["int"], 5, None, {"type": "int"}])
def test_deserialize_type_refuses_what_is_not_a_string(value: Any) -> None:
    with pytest.raises(SerializationError, match="must be written as a string"):
        deserialize_type(value)


def test_object_to_dict_uses_the_objects_to_dict() -> None:
    assert object_to_dict(Configurable("a", [1])) == {
        "type": f"{__name__}.Configurable",
        "init_parameters": {"name": "a", "items": [1]},
    }


def test_object_to_dict_refuses_objects_without_to_dict() -> None:
    with pytest.raises(SerializationError, match="NoToDict: it has no to_dict"):
        object_to_dict(NoToDict())


def test_object_from_dict_with_default_from_dict_does_not_mutate_its_input() -> None:
    data = object_to_dict(Configurable("a", [1, {"k": "v"}]))
    before = copy.deepcopy(data)
    obj = object_from_dict(data)
    assert isinstance(obj, Configurable)
    assert obj.items == [1, {"k": "v"}, "touched"]
    obj.items[1]["k"] = "changed"
    assert data == before


def test_object_from_dict_with_the_classes_from_dict_does_not_mutate_its_input() -> None:
    data = {"type": f"{__name__}.WithFromDict", "init_parameters": {"value": ["a"]}}
    before = copy.deepcopy(data)
    obj = object_from_dict(data)
    assert isinstance(obj, WithFromDict)
    assert obj.value == ["a", "popped"]
    assert data == before


def test_object_from_dict_round_trips_a_json_envelope() -> None:
    text = json.dumps(object_to_dict(Configurable("città 🍎", ["x"])), ensure_ascii=False)
    obj = object_from_dict(json.loads(text))
    assert obj.name == "città 🍎"
    assert obj.items == ["x", "touched"]


@pytest.mark.parametrize("data", [{}, {"type": 5}, {"init_parameters": {}}, ["type"], None])
def test_object_from_dict_refuses_data_without_a_type(data: Any) -> None:
    with pytest.raises(SerializationError, match="'type' key"):
        object_from_dict(data)


def test_object_from_dict_respects_the_allowlist() -> None:
    data = object_to_dict(Configurable("a"))
    with pytest.raises(SerializationError, match="not in the allowlist"):
        object_from_dict(data, allowed_modules=())
    assert object_from_dict(data, allowed_modules=("tests",)).name == "a"


# ---- import_object ----------------------------------------------------------------------------------------


def test_import_object_follows_modules_and_attributes() -> None:
    assert import_object("os.path.join") is os.path.join
    assert import_object("handrail.dataclasses.ChatMessage") is ChatMessage
    assert import_object(f"{__name__}.Configurable.Nested.helper")() == "nested"
    assert import_object("json.dumps") is json.dumps


@pytest.mark.parametrize("path", ["json", "", 5, None])
def test_import_object_needs_a_dotted_path(path: Any) -> None:
    with pytest.raises(SerializationError, match="expected a dotted path"):
        import_object(path)


@pytest.mark.parametrize("path", ["no_such_module_xyz.thing", "json.no_such_attribute", "handrail.nope.Nope"])
def test_import_object_reports_what_cannot_be_found(path: str) -> None:
    with pytest.raises(SerializationError, match="Cannot import"):
        import_object(path)


@pytest.mark.parametrize("path", ["os.system", "subprocess.run", "builtins.eval", "handrail_evil.x", "handrailx.y"])
def test_import_object_allowlist_refuses_other_modules(path: str) -> None:
    with pytest.raises(SerializationError, match="not in the allowlist") as info:
        import_object(path, allowed_modules=())
    assert path in str(info.value)
    assert isinstance(info.value, ValueError)


def test_import_object_allowlist_admits_handrail_and_named_prefixes() -> None:
    assert import_object("handrail.dataclasses.ChatMessage", allowed_modules=()) is ChatMessage
    assert import_object("json.decoder.JSONDecoder", allowed_modules=("json",)) is json.decoder.JSONDecoder
    assert import_object("json.decoder.JSONDecoder", allowed_modules=("json.decoder",)) is json.decoder.JSONDecoder
    with pytest.raises(SerializationError, match="not in the allowlist"):
        import_object("os.system", allowed_modules=("os.path",))
    # os.path.join is defined in posixpath: the module that defines an object must be allowed too
    with pytest.raises(SerializationError, match="defined in 'posixpath'"):
        import_object("os.path.join", allowed_modules=("os",))
    assert import_object("os.path.join", allowed_modules=("os", "posixpath")) is os.path.join


def test_import_object_allowlist_given_as_one_string_is_one_prefix() -> None:
    assert import_object("json.dumps", allowed_modules="json") is json.dumps
    # a plain string must not be read as a set of one-letter prefixes
    with pytest.raises(SerializationError, match="not in the allowlist"):
        import_object("j.x", allowed_modules="json")


# ---- callables --------------------------------------------------------------------------------------------


def test_serialize_callable_of_module_functions_and_class_members() -> None:
    assert serialize_callable(module_function) == f"{__name__}.module_function"
    assert serialize_callable(decorated_function) == f"{__name__}.decorated_function"
    assert serialize_callable(Configurable.Nested.helper) == f"{__name__}.Configurable.Nested.helper"
    assert serialize_callable(Configurable.Nested.build) == f"{__name__}.Configurable.Nested.build"
    assert serialize_callable(merge_lists) == "handrail.dataclasses.state.merge_lists"
    assert serialize_callable(len) == "builtins.len"


@pytest.mark.parametrize(
    "fn",
    [
        module_function,
        decorated_function,
        Configurable.Nested.helper,
        Configurable.Nested.build,
        merge_lists,
        len,
    ],
)
def test_callables_round_trip(fn: Callable[..., Any]) -> None:
    back = deserialize_callable(serialize_callable(fn))
    assert back == fn or getattr(back, "__wrapped__", None) is getattr(fn, "__wrapped__", object())


def test_serialize_callable_refuses_lambdas() -> None:
    with pytest.raises(SerializationError, match="lambdas and functions defined inside") as info:
        serialize_callable(lambda x: x)
    assert "<lambda>" in str(info.value)
    assert isinstance(info.value, HandrailError)


def test_serialize_callable_refuses_closures() -> None:
    def local(x: int) -> int:
        return x

    with pytest.raises(SerializationError, match="Define it at module level") as info:
        serialize_callable(local)
    assert "<locals>" in str(info.value)


def test_serialize_callable_refuses_objects_without_a_name() -> None:
    with pytest.raises(SerializationError, match="no importable module and name"):
        serialize_callable(functools.partial(module_function, 1))


def test_deserialize_callable_refuses_non_callables_and_respects_the_allowlist() -> None:
    with pytest.raises(SerializationError, match="does not name a callable"):
        deserialize_callable("os.sep")
    with pytest.raises(SerializationError, match="not in the allowlist"):
        deserialize_callable("os.system", allowed_modules=())
    assert deserialize_callable(f"{__name__}.module_function", allowed_modules=("tests",))(1) == 2


# ---- types ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "text"),
    [
        (str, "str"),
        (int, "int"),
        (float, "float"),
        (bool, "bool"),
        (bytes, "bytes"),
        (dict, "dict"),
        (list, "list"),
        (tuple, "tuple"),
        (set, "set"),
        (frozenset, "frozenset"),
        (None, "None"),
        (type(None), "None"),
        (Any, "typing.Any"),
        (list[str], "list[str]"),
        (dict[str, int], "dict[str, int]"),
        (dict[str, list[int]], "dict[str, list[int]]"),
        (tuple[int, str], "tuple[int, str]"),
        (tuple[int, ...], "tuple[int, ...]"),
        (set[bytes], "set[bytes]"),
        (int | None, "int | None"),
        (str | int | None, "str | int | None"),
        (list[str] | None, "list[str] | None"),
        (dict[str, int | None], "dict[str, int | None]"),
        (ChatMessage, "handrail.dataclasses.chat_message.ChatMessage"),
        (list[ChatMessage], "list[handrail.dataclasses.chat_message.ChatMessage]"),
        (State | None, "handrail.dataclasses.state.State | None"),
        (dict[str, Any], "dict[str, typing.Any]"),
        (Configurable.Nested, f"{__name__}.Configurable.Nested"),
    ],
)
def test_types_serialize_and_round_trip(tp: Any, text: str) -> None:
    assert serialize_type(tp) == text
    back = deserialize_type(text)
    assert back == (type(None) if tp is None else tp)
    assert serialize_type(back) == text


@pytest.mark.parametrize(
    ("tp", "text", "back"),
    [
        (Optional[int], "int | None", int | None),  # noqa: UP045
        (Union[int, str], "int | str", int | str),  # noqa: UP007
        (typing.List[int], "list[int]", list[int]),  # noqa: UP006
        (
            typing.Dict[str, ToolCall],  # noqa: UP006
            "dict[str, handrail.dataclasses.chat_message.ToolCall]",
            dict[str, ToolCall],
        ),
    ],
)
def test_typing_module_aliases_serialize_to_the_builtin_spelling(tp: Any, text: str, back: Any) -> None:
    assert serialize_type(tp) == text
    assert deserialize_type(text) == back


@pytest.mark.parametrize(
    ("text", "tp"),
    [
        ("  list[ str ]  ", list[str]),
        ("Any", Any),
        ("NoneType", type(None)),
        ("typing.List[int]", typing.List[int]),  # noqa: UP006
        ("Exception", Exception),
    ],
)
def test_deserialize_type_accepts_other_spellings(text: str, tp: Any) -> None:
    assert deserialize_type(text) == tp


def test_serialize_type_refuses_local_classes_and_non_types() -> None:
    class Local:
        pass

    with pytest.raises(SerializationError, match="local class"):
        serialize_type(Local)
    with pytest.raises(SerializationError, match="Cannot serialize type"):
        serialize_type(5)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("no_such_module_xyz.Thing", "Cannot import"),
        ("int[str]", "Cannot parameterize"),
        ("undotted_unknown", "expected a dotted path"),
    ],
)
def test_deserialize_type_reports_bad_strings(text: str, match: str) -> None:
    with pytest.raises(SerializationError, match=match):
        deserialize_type(text)


def test_deserialize_type_allowlist_admits_builtins_typing_and_handrail_only() -> None:
    assert deserialize_type("dict[str, list[int]] | None", allowed_modules=()) == dict[str, list[int]] | None
    assert deserialize_type("typing.Any", allowed_modules=()) is Any
    assert deserialize_type("list[handrail.dataclasses.ChatMessage]", allowed_modules=()) == list[ChatMessage]
    with pytest.raises(SerializationError, match="not in the allowlist"):
        deserialize_type(f"{__name__}.Configurable", allowed_modules=())
    with pytest.raises(SerializationError, match="not in the allowlist"):
        deserialize_type("list[collections.OrderedDict]", allowed_modules=())
    assert deserialize_type(f"{__name__}.Configurable", allowed_modules=("tests.core",)) is Configurable


def test_typing_aliases_are_read_under_an_allowlist() -> None:
    # Haystack writes socket and route types as typing aliases: typing.List[...], typing.Optional[...]
    assert deserialize_type("typing.List[handrail.dataclasses.ChatMessage]", allowed_modules=()) == List[ChatMessage]  # noqa: UP006
    assert deserialize_type("typing.Optional[str]", allowed_modules=()) == Optional[str]  # noqa: UP045
    with restricted_imports(()):
        assert deserialize_type("typing.Dict[str, typing.Any]") == Dict[str, Any]  # noqa: UP006
    with pytest.raises(SerializationError, match=r"'typing\.cast' is not a type"):
        deserialize_type("typing.cast", allowed_modules=())


def test_deserialize_type_does_not_walk_through_typing_into_other_modules() -> None:
    # typing imports other modules (sys, functools, ...); "typing.<x>.<y>" must not reach them
    with pytest.raises(SerializationError, match="not in the allowlist"):
        deserialize_type("typing.sys.modules", allowed_modules=())


def test_core_package_re_exports_the_helpers() -> None:
    assert sorted(core.__all__) == sorted(
        [
            "HAYSTACK_TYPES",
            "load_haystack",
            "Secret",
            "default_from_dict",
            "default_to_dict",
            "deserialize_callable",
            "deserialize_type",
            "import_object",
            "object_from_dict",
            "object_to_dict",
            "qualified_name",
            "serialize_callable",
            "serialize_type",
        ]
    )
    for name in core.__all__:
        module = {"Secret": "secret", "HAYSTACK_TYPES": "haystack_yaml", "load_haystack": "haystack_yaml"}.get(
            name, "serialization"
        )
        assert getattr(core, name) is import_object(f"handrail.core.{module}.{name}")


class TestAllowlistCannotBeSidestepped:
    """A restricted import must not reach other modules through handrail's own imports."""

    def test_a_module_reached_through_an_attribute_is_refused(self) -> None:
        with pytest.raises(SerializationError, match="reaches module 'os'"):
            import_object("handrail.core.pipeline.os.system", allowed_modules=())

    def test_a_foreign_object_re_exported_by_an_allowed_module_is_refused(self) -> None:
        with pytest.raises(SerializationError, match="defined in 'pathlib'"):
            import_object("handrail.core._files.Path", allowed_modules=())

    def test_python_callers_still_trust_paths(self) -> None:
        import os

        assert import_object("handrail.core.pipeline.os.system") is os.system

    def test_a_type_that_is_not_a_class_is_never_called(self, tmp_path: Any) -> None:
        marker = tmp_path / "ran"
        data = {"type": "os.system", "init_parameters": {"command": f"touch {marker}"}}
        with pytest.raises(SerializationError, match="not a class"):
            object_from_dict(data)
        assert not marker.exists()


def test_pipeline_yaml_cannot_run_a_shell_command(tmp_path: Any) -> None:
    from handrail import Pipeline

    marker = tmp_path / "pwned"
    text = f"""
components:
  a:
    type: handrail.core.pipeline.os.system
    init_parameters: {{command: "touch {marker}"}}
connections: []
"""
    with pytest.raises(SerializationError):
        Pipeline.loads(text)
    assert not marker.exists()


@pytest.mark.parametrize("restricted", [False, True])
def test_a_missing_name_in_an_importable_module_is_named_as_missing(restricted: bool) -> None:
    from handrail.core.serialization import import_object, restricted_imports

    with contextlib.ExitStack() as stack:
        if restricted:
            stack.enter_context(restricted_imports(()))
        with pytest.raises(SerializationError, match=r"'handrail\.core\._files' has no attribute 'nope'"):
            import_object("handrail.core._files.nope")
