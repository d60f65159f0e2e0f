"""One definition of JSON data for the argument parser and the snapshot writer (issue 14, item 6)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.core.json_data import MAX_DEPTH, JSONDataError, check_json, json_problem, parse_json, shown_text
from handrail.dataclasses._ledger import LedgerEntry
from handrail.dataclasses._message_json import dump_json
from handrail.errors import SerializationError


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("NaN", "NaN is not a JSON number: JSON numbers are finite"),
        ('{"v": Infinity}', "Infinity is not a JSON number"),
        ('{"v": -Infinity}', "-Infinity is not a JSON number"),
        ('{"v": 1e400}', "at ['v']: inf is not allowed in JSON"),
        ('{"v": "\\ud800"}', "at ['v']: the text holds a lone surrogate '\\ud800'"),
        ('{"v": ["ok", "\\udfff!"]}', "at ['v'][1]: the text holds a lone surrogate"),
        ('{"\\udbff": 1}', "at .keys()['\\udbff']: the text holds a lone surrogate"),
        (_deep(MAX_DEPTH + 1), f"values nested more than {MAX_DEPTH} levels deep are refused"),
        ("[" * 100_000, f"values nested more than {MAX_DEPTH} levels deep are refused"),
        ('{"a": 1', "Expecting ',' delimiter"),
    ],
    ids=[
        "nan",
        "inf",
        "minus-inf",
        "overflow",
        "surrogate",
        "surrogate-in-list",
        "surrogate-key",
        "65-deep",
        "100000-deep",
        "syntax",
    ],
)
def test_parse_json_refuses_what_a_snapshot_cannot_hold(text: str, reason: str) -> None:
    with pytest.raises(JSONDataError) as info:
        parse_json(text)
    assert reason in str(info.value) and isinstance(info.value, ValueError)


def test_a_100000_deep_text_is_refused_without_a_recursion_error() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000, _deep(100_000)):
        with pytest.raises(JSONDataError, match="nested more than"):
            parse_json(text)


def test_parse_json_reads_json_data_up_to_the_nesting_limit() -> None:
    assert parse_json(_deep(MAX_DEPTH)) == json.loads(_deep(MAX_DEPTH))
    assert parse_json('{"pair": "\\ud83d\\ude00", "n": -0.5e3}') == {"pair": "😀", "n": -500.0}


def test_the_writer_refuses_the_same_values_with_their_place() -> None:
    for value, expected in [
        ({"v": float("nan")}, r"^args\['v'\]: nan is not allowed in JSON\.$"),
        ({"v": "\ud800"}, r"^args\['v'\]: the text holds a lone surrogate"),
        (json.loads(_deep(MAX_DEPTH + 1)), "nested more than 64 levels"),
    ]:
        with pytest.raises(SerializationError, match=expected):
            check_json(value, "args")
    check_json(json.loads(_deep(MAX_DEPTH)), "args")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"v": float("nan")}, "NaN is not a JSON number"),
        ({"v": [float("-inf")]}, "-Infinity is not a JSON number"),
        ({"s": "a\udc00"}, "at ['s']: the text holds a lone surrogate '\\udc00'"),
        ({"\ud800": 1}, "the text holds a lone surrogate"),
        (json.loads(_deep(200)), "nested more than 64 levels"),
    ],
    ids=["nan", "minus-inf", "surrogate", "surrogate-key", "deep"],
)
def test_shown_text_is_writable_and_refused_again_for_the_same_reason(value: Any, reason: str) -> None:
    text = shown_text(value)
    text.encode("utf-8")  # a snapshot can hold it
    with pytest.raises(JSONDataError) as info:
        parse_json(text)
    assert reason in str(info.value)


# --------------------------------------------------------------------------- property: parser and writer agree

_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities included
    | st.text(alphabet=st.characters(codec=None), max_size=6)  # surrogates included
)
_values = st.recursive(
    _leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12,
)  # fmt: skip
_tokens = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", '"\\ud800"', '"\\udc00x"', "[" * 70 + "]" * 70])


def _written(value: Any) -> bool:
    """True when a snapshot can hold ``value`` as a ledger entry's arguments (the writer's own answer)."""
    try:
        dump_json(value).encode("utf-8")
        LedgerEntry("c1", "t", "pending", {"v": value})
    except (ValueError, TypeError, RecursionError, SerializationError):
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(value=_values, token=_tokens, where=st.integers(min_value=0, max_value=3))
def test_whatever_the_parser_accepts_a_snapshot_can_hold(value: Any, token: str, where: int) -> None:
    text = json.dumps({"v": value}, ensure_ascii=where % 2 == 0)
    if where >= 2:  # splice a token Python's json.loads accepts beyond JSON data
        text = text[:-1] + f', "t": {token}}}'
    try:
        parsed = parse_json(text)
    except JSONDataError:
        return
    assert _written(parsed["v"])
    assert json_problem(parsed) is None


@settings(max_examples=300, deadline=None)
@given(value=_values)
def test_whatever_a_snapshot_can_hold_the_parser_reads_back(value: Any) -> None:
    written = _written(value)
    assert written == (json_problem({"v": value}) is None)  # the checker names exactly what the writer refuses
    if written:
        assert parse_json(dump_json({"v": value})) == json.loads(dump_json({"v": value}))


def test_a_state_value_holding_a_lone_surrogate_is_named_when_encoded() -> None:
    from handrail.core._typed_json import encode_value

    with pytest.raises(SerializationError, match=r"^state\['note'\]\['k'\]: a str cannot be written .*lone surrogate"):
        encode_value({"k": "\ud800"}, "state['note']")


# --------------------------------------------------------------------------- integers Python cannot write


@pytest.mark.parametrize(
    ("value", "path"),
    [
        (10**5000, ""),
        ({"v": [1, -(10**5000)]}, "['v'][1]"),
        ([{"k": 10**4300}], "[0]['k']"),
        ({10**5000: 1}, ".keys()"),
    ],
    ids=["top", "nested", "just-over", "key"],
)
def test_an_int_of_more_digits_than_python_writes_is_not_json_data(value: Any, path: str) -> None:
    problem = json_problem(value)
    assert problem is not None and problem[0].startswith(path) and "more than 4300 digits" in problem[1]
    with pytest.raises(SerializationError, match="more than 4300 digits"):
        check_json(value, "args")
    assert "<an integer of more than 4300 digits>" in shown_text(value)  # never a bare ValueError


def test_ints_up_to_the_limit_are_json_data() -> None:
    assert json_problem([10**4299, -(10**4299), 2**1920, True]) is None
    assert parse_json('{"v": ' + "9" * 4300 + "}") == {"v": int("9" * 4300)}


def test_argument_text_with_an_int_of_too_many_digits_is_refused_as_json_data() -> None:
    with pytest.raises(JSONDataError, match="Exceeds the limit"):
        parse_json('{"v": ' + "9" * 5000 + "}")
