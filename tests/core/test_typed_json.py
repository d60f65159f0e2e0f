from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import decimal
import enum
import json
import math
import pathlib
import threading
import uuid
import zoneinfo
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handrail.core._typed_json import MAX_DEPTH, TYPE_KEY, check_json, decode_value, encode_value
from handrail.core.serialization import restricted_imports
from handrail.dataclasses import ChatMessage, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.errors import SerializationError, SnapshotError

# ---- module-level classes, importable by dotted path ----------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    PAIR = (1, 2)


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mode(enum.StrEnum):
    FAST = "fast"


class Perm(enum.Flag):
    R = 1
    W = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Config:
    name: str
    items: list[Any]
    point: Point | None = None
    derived: int = dataclasses.field(init=False, default=0)

    def __post_init__(self) -> None:
        self.derived = len(self.items)


class Money:
    """A plain class serialized through its own to_dict / from_dict."""

    def __init__(self, amount: decimal.Decimal, currency: str) -> None:
        self.amount = amount
        self.currency = currency

    def to_dict(self) -> dict[str, Any]:
        return {"amount": self.amount, "currency": self.currency}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Money:
        return cls(data["amount"], data["currency"])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and (self.amount, self.currency) == (other.amount, other.currency)

    def __hash__(self) -> int:
        return hash((self.amount, self.currency))


class NoToDict:
    pass


def assert_same(a: Any, b: Any) -> None:
    """Equal values of exactly the same types, recursively (so tuple != list, set != frozenset, 1 != True)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert_same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    else:
        assert a == b


def round_trip(value: Any) -> Any:
    data = encode_value(value)
    text = json.dumps(data, allow_nan=False)  # JSON-compatible, strictly
    return decode_value(json.loads(text))


def test_exports() -> None:
    from handrail.core import _typed_json as typed_json

    assert all(hasattr(typed_json, name) for name in typed_json.__all__)


# ---- round trips -----------------------------------------------------------------------------------------

OSLO = zoneinfo.ZoneInfo("Europe/Oslo")

TYPED_VALUES = [
    ("tuple", (1, "a", (2,))),
    ("empty tuple", ()),
    ("set", {1, 2, 3}),
    ("frozenset", frozenset({"a", "b"})),
    ("bytes", b"\x00\xffbinary"),
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("-inf", float("-inf")),
    ("negative zero", -0.0),
    ("naive datetime", dt.datetime(2024, 5, 1, 12, 30, 15, 123456)),
    ("utc datetime", dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)),
    ("offset datetime", dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=-3, minutes=-30)))),
    ("zoneinfo datetime", dt.datetime(2024, 7, 1, 9, 0, tzinfo=OSLO)),
    ("fold datetime", dt.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=OSLO)),
    ("date", dt.date(1999, 12, 31)),
    ("time", dt.time(23, 59, 59, 999)),
    ("offset time", dt.time(8, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))),
    ("timedelta", dt.timedelta(days=-2, seconds=5, microseconds=7)),
    ("decimal", decimal.Decimal("1.10")),
    ("decimal nan", decimal.Decimal("-0E+3")),
    ("uuid", uuid.UUID("12345678-1234-5678-1234-567812345678")),
    ("path", pathlib.Path("/srv/data/file.txt")),
    ("pure windows path", pathlib.PureWindowsPath("C:/Users/ana")),
    ("enum", Color.RED),
    ("enum with tuple value", Color.PAIR),
    ("int enum", Level.HIGH),
    ("str enum", Mode.FAST),
    ("flag combination", Perm.R | Perm.W),
    ("frozen dataclass", Point(1, 2)),
    ("object", Money(decimal.Decimal("9.99"), "EUR")),
    ("chat message", ChatMessage.from_user("città 🍎", meta={"k": [1]})),
    ("tool call", ToolCall(tool_name="t", arguments={"a": 1}, id="c1")),
    ("decision", ToolExecutionDecision(tool_name="t", execute=False, tool_call_id="c1", feedback="no")),
    ("int keys", {1: "a", 2: "b"}),
    ("mixed keys", {"a": 1, (1, 2): {3}, None: True, 1.5: b"x"}),
    ("$type key", {"$type": "tuple", "items": [1]}),
    ("nested", {"a": [(1, {2}), {"b": frozenset({(1, 2)})}], "c": {"d": dt.date(2020, 1, 1)}}),
]


@pytest.mark.parametrize(("label", "value"), TYPED_VALUES, ids=[label for label, _ in TYPED_VALUES])
def test_typed_values_round_trip_with_their_types(label: str, value: Any) -> None:
    assert_same(round_trip(value), value)


def test_zoneinfo_and_fold_survive() -> None:
    value = dt.datetime(2024, 10, 27, 2, 30, fold=1, tzinfo=OSLO)
    back = round_trip(value)
    assert back.tzinfo is OSLO
    assert back.fold == 1
    assert back.utcoffset() == value.utcoffset()


def test_a_dataclass_keeps_its_fields_and_reruns_post_init() -> None:
    value = Config("c", [1, (2, 3)], Point(0, 1))
    data = encode_value(value)
    assert data["$type"] == "dataclass"
    assert set(data["fields"]) == {"name", "items", "point"}  # init=False fields are not written
    back = round_trip(value)
    assert type(back) is Config
    assert_same(back.items, [1, (2, 3)])
    assert back.point == Point(0, 1)
    assert back.derived == 2


@pytest.mark.parametrize(
    "value", [None, True, False, 0, -(2**70), 1.5, "", "città 🍎", [], {}, {"a": [1, {"b": None}]}, [[[]]]]
)
def test_plain_json_is_written_as_is(value: Any) -> None:
    assert encode_value(value) == value
    assert_same(decode_value(encode_value(value)), value)


def test_bool_and_int_keep_their_types() -> None:
    assert_same(round_trip([True, 1, 1.0, {True: 1}]), [True, 1, 1.0, {True: 1}])


def test_object_and_dataclass_values_are_encoded_recursively() -> None:
    data = encode_value(Money(decimal.Decimal("1.5"), "EUR"))
    assert data == {
        TYPE_KEY: "object",
        "class": "tests.core.test_typed_json.Money",
        "data": {"amount": {TYPE_KEY: "decimal", "value": "1.5"}, "currency": "EUR"},
    }


def test_chat_messages_go_through_to_dict() -> None:
    message = ChatMessage.from_assistant("hi", tool_calls=[ToolCall("t", {"x": 1}, "c1")])
    data = encode_value(message)
    assert data == {
        TYPE_KEY: "object",
        "class": "handrail.dataclasses.chat_message.ChatMessage",
        "data": message.to_dict(),
    }


def test_set_items_are_written_in_a_stable_order() -> None:
    a = encode_value({"pear", "apple", "fig", "kiwi"})
    b = encode_value({"kiwi", "fig", "apple", "pear"})
    assert a == b
    assert a["items"] == sorted(a["items"])


def test_decode_does_not_modify_its_input() -> None:
    data = encode_value({"a": (1, [2]), 3: {4}, "p": Point(1, 2)})
    before = copy.deepcopy(data)
    decode_value(data)
    assert data == before


# ---- refusals when writing -------------------------------------------------------------------------------


def test_a_lock_is_named_with_its_place_and_type() -> None:
    with pytest.raises(SerializationError) as info:
        encode_value({"ok": 1, "lock": threading.Lock()}, "state")
    message = str(info.value)
    assert message.startswith("state['lock']: a _thread.lock cannot be written to a snapshot")


def test_the_path_goes_through_dataclass_fields_and_lists() -> None:
    with pytest.raises(
        SerializationError, match=r"^state\['cfg'\]\.items\[2\]: a tests\.core\.test_typed_json\.NoToDict"
    ):
        encode_value(Config("c", [1, 2, NoToDict()]), "state['cfg']")


def test_the_path_goes_through_non_str_keys_and_object_data() -> None:
    with pytest.raises(SerializationError, match=r"^v\.keys\(\)\[0\]: a _thread\.lock"):
        encode_value({threading.Lock(): 1}, "v")
    with pytest.raises(SerializationError, match=r"^v\.to_dict\(\)\['currency'\]: a object"):
        encode_value(Money(decimal.Decimal(1), object()), "v")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [lambda: 1, object(), NoToDict(), bytearray(b"x"), type, iter([]), pathlib.PurePath],
    ids=["lambda", "object", "plain instance", "bytearray", "a class", "iterator", "a path class"],
)
def test_unsupported_values_are_refused(value: Any) -> None:
    with pytest.raises(SerializationError, match="cannot be written to a snapshot"):
        encode_value({"k": value})


def test_subclasses_of_builtins_are_refused_rather_than_losing_their_type() -> None:
    class MyDict(dict[str, int]):
        pass

    with pytest.raises(SerializationError, match="MyDict"):
        encode_value(MyDict(a=1))


def test_local_classes_are_refused_because_they_cannot_be_imported_back() -> None:
    class Local(enum.Enum):
        A = 1

    @dataclasses.dataclass
    class LocalData:
        x: int

    for value in (Local.A, LocalData(1)):
        with pytest.raises(SerializationError, match="cannot be imported back"):
            encode_value([value], "state['x']")


def test_reference_cycles_are_refused() -> None:
    cycle: list[Any] = [1]
    cycle.append(cycle)
    with pytest.raises(SerializationError, match=r"^value\[1\]: a reference cycle"):
        encode_value(cycle)


def test_repeated_but_acyclic_references_are_fine() -> None:
    shared = [1, 2]
    assert_same(round_trip([shared, shared, (shared,)]), [[1, 2], [1, 2], ([1, 2],)])


def test_too_deep_nesting_is_refused() -> None:
    deep: Any = []
    for _ in range(MAX_DEPTH + 1):
        deep = [deep]
    with pytest.raises(SerializationError, match="nested more than"):
        encode_value(deep)


@pytest.mark.parametrize("check", [encode_value, check_json])
def test_the_path_of_a_too_deep_value_is_clipped_in_the_message(check: Any) -> None:
    deep: Any = {"leaf": 1}
    for _ in range(MAX_DEPTH * 2):
        deep = {"a": deep}
    with pytest.raises(SerializationError, match="nested more than") as info:
        check({"arguments": deep})
    assert "…" in str(info.value) and len(str(info.value)) < 300


def test_the_deepest_allowed_nesting_round_trips() -> None:
    deep: Any = (1,)
    for _ in range(MAX_DEPTH - 1):
        deep = (deep,)
    assert_same(round_trip(deep), deep)


def test_unsupported_time_zones_are_refused() -> None:
    class Fixed(dt.tzinfo):
        def utcoffset(self, d: dt.datetime | None) -> dt.timedelta:
            return dt.timedelta(0)

    with pytest.raises(SerializationError, match="tzinfo"):
        encode_value(dt.datetime(2024, 1, 1, tzinfo=Fixed()))
    with pytest.raises(SerializationError, match="tzinfo"):
        encode_value(dt.time(1, 0, tzinfo=OSLO))


# ---- refusals when reading -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"$type": "nope"}, r"unknown \$type tag 'nope'"),
        ({"$type": 5}, r"unknown \$type tag 5"),
        ({"$type": "tuple"}, r"'tuple' value needs 'items' of type list"),
        ({"$type": "tuple", "items": "ab"}, r"needs 'items'"),
        ({"$type": "dict", "items": [[1]]}, r"dict item 0 must be a \[key, value\] pair"),
        ({"$type": "dict", "items": [[[1], 2]]}, r"cannot rebuild the dict value: TypeError"),
        ({"$type": "set", "items": [[1]]}, r"cannot rebuild the set value"),
        ({"$type": "bytes", "base64": "not base64!"}, r"invalid base64"),
        ({"$type": "float", "value": "1.5"}, r"must be 'nan', 'inf' or '-inf'"),
        ({"$type": "datetime", "value": "yesterday"}, r"cannot rebuild the datetime value"),
        ({"$type": "datetime", "value": "2024-01-01T00:00:00", "zone": "Mars/Olympus"}, r"cannot rebuild"),
        ({"$type": "timedelta", "days": 1, "seconds": True, "microseconds": 0}, r"needs 'seconds' of type int"),
        ({"$type": "decimal", "value": "abc"}, r"cannot rebuild the decimal value"),
        ({"$type": "uuid", "value": "abc"}, r"cannot rebuild the uuid value"),
        ({"$type": "path", "value": "/x", "kind": "Path2"}, r"unknown path kind 'Path2'"),
        ({"$type": "enum", "class": "tests.core.test_typed_json.Color", "value": "blue"}, r"cannot rebuild the enum"),
        ({"$type": "enum", "class": "tests.core.test_typed_json.Color"}, r"needs a 'value' key"),
        ({"$type": "enum", "class": "tests.core.test_typed_json.Point", "value": 1}, r"is not an Enum class"),
        ({"$type": "dataclass", "class": "tests.core.test_typed_json.Point", "fields": {"x": 1}}, r"TypeError"),
        ({"$type": "dataclass", "class": "tests.core.test_typed_json.Money", "fields": {}}, r"is not a dataclass"),
        ({"$type": "object", "class": "tests.core.test_typed_json.Point", "data": {}}, r"with from_dict"),
        ({"$type": "object", "class": "tests.core.test_typed_json.Money"}, r"needs a 'data' key"),
        ({"$type": "object", "class": "tests.core.test_typed_json.Nope", "data": {}}, r"Cannot import"),
        ({"$type": "object", "class": 3, "data": {}}, r"needs 'class' of type str"),
    ],
)
def test_bad_tagged_data_is_refused_naming_the_place(data: dict[str, Any], expected: str) -> None:
    with pytest.raises(SnapshotError, match=r"^state\['k'\]\[1\]: .*" + expected):
        decode_value([0, data], "state['k']")


def test_values_that_are_not_json_data_are_refused() -> None:
    with pytest.raises(SnapshotError, match=r"^v\[0\]: expected JSON data, found a tuple"):
        decode_value([(1, 2)], "v")


def test_too_deep_data_is_refused() -> None:
    deep: Any = []
    for _ in range(3 * MAX_DEPTH):
        deep = [deep]
    with pytest.raises(SnapshotError, match="nested more than"):
        decode_value(deep)


def test_classes_outside_the_allowlist_are_refused_inside_restricted_imports() -> None:
    data = encode_value({"color": Color.RED})
    with restricted_imports(()), pytest.raises(SnapshotError, match=r"^state\['color'\]: Refusing to import"):
        decode_value(data["color"], "state['color']")
    with restricted_imports(("tests",)):
        assert decode_value(data["color"]) is Color.RED
    with restricted_imports(()):  # handrail's own classes are always allowed
        message = ChatMessage.from_user("hi")
        assert decode_value(encode_value(message)) == message


def test_a_module_that_merely_shares_a_prefix_is_not_allowed() -> None:
    data = {"$type": "enum", "class": "testsuite.Color", "value": 1}
    with restricted_imports(("tests",)), pytest.raises(SnapshotError, match=r"Refusing to import 'testsuite\.Color'"):
        decode_value(data)


# ---- check_json ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [None, 1, 1.5, "x", [1, [2]], {"a": {"b": [None, True]}}, {1: "int keys are JSON"}])
def test_check_json_accepts_what_json_dumps_accepts(value: Any) -> None:
    check_json(value)
    json.dumps(value, allow_nan=False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": [1, float("nan")]}, r"^meta\['a'\]\[1\]: nan is not allowed in JSON\.$"),
        ({"a": {"when": dt.date(2020, 1, 1)}}, r"^meta\['a'\]\['when'\]: a datetime\.date is not JSON data"),
        ({(1, 2): 1}, r"^meta\.keys\(\)\[\(1, 2\)\]: a tuple key is not allowed"),
        ({"s": {1}}, r"^meta\['s'\]: a set is not JSON data"),
    ],
)
def test_check_json_names_the_first_bad_place(value: Any, expected: str) -> None:
    with pytest.raises(SerializationError, match=expected):
        check_json(value, "meta")


def test_check_json_refuses_cycles() -> None:
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    with pytest.raises(SerializationError, match="nested more than"):
        check_json(cycle)


# ---- property: any mix of supported values round-trips with its types ------------------------------------

hashable_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=10),
    st.binary(max_size=10),
    st.dates(),
    st.sampled_from([Color.RED, Level.LOW, Mode.FAST, Perm.W]),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.uuids(),
)
scalars = st.one_of(
    hashable_scalars,
    st.just(float("nan")),
    st.datetimes(timezones=st.sampled_from([None, dt.UTC, OSLO])),
    st.times(),
    st.timedeltas(),
    st.builds(Point, st.integers(), st.integers()),
)
hashables = st.recursive(hashable_scalars, lambda inner: st.tuples(inner, inner), max_leaves=4)
typed_values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.sets(hashables, max_size=3),
        st.frozensets(hashables, max_size=3),
        st.dictionaries(st.text(max_size=5), children, max_size=3),
        st.dictionaries(hashables, children, max_size=3),
        st.builds(Config, st.text(max_size=5), st.lists(children, max_size=2)),
    ),
    max_leaves=10,
)


def assert_same_deep(a: Any, b: Any) -> None:
    """assert_same that also looks inside sets and dataclasses."""
    if isinstance(a, set | frozenset):
        assert type(a) is type(b)
        assert a == b
    elif isinstance(a, Config):
        assert type(b) is Config
        assert a.name == b.name
        assert_same_deep(a.items, b.items)
    elif isinstance(a, dict):
        assert type(b) is dict
        assert len(a) == len(b)
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True):
            assert_same_deep(ka, kb)
            assert_same_deep(va, vb)
    elif isinstance(a, list | tuple):
        assert type(a) is type(b)
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_deep(x, y)
    else:
        assert_same(a, b)


@given(typed_values)
def test_property_typed_values_round_trip_through_json_text(value: Any) -> None:
    assert_same_deep(round_trip(value), value)


def test_an_int_of_more_digits_than_python_writes_is_refused_naming_its_place() -> None:
    # json.dumps raised a bare ValueError ("Exceeds the limit (4300 digits)") from whoever wrote the snapshot.
    with pytest.raises(SerializationError, match=r"state\['n'\]\[1\]: a int cannot be written.*more than 4300 digits"):
        encode_value({"n": [1, 10**5000]}, "state")
    assert decode_value(encode_value({"n": 10**4299})) == {"n": 10**4299}
