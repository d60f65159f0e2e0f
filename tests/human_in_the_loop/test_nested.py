"""Copying and JSON-encoding without recursion (``handrail.human_in_the_loop._nested``)."""

from __future__ import annotations

import json
import math
from datetime import date
from typing import Any

import pytest

from handrail.human_in_the_loop._nested import _encode_iteratively, copy_params, encode_json
from handrail.human_in_the_loop.policies import params_digest

from ._helpers import DEEP, nested


def test_copy_params_copies_any_depth_and_keeps_sharing_and_cycles() -> None:
    deep = nested(DEEP, leaf=[date(2024, 1, 2)])
    shared: list[Any] = [1]
    cyclic: dict[str, Any] = {"shared": shared, "again": shared, "deep": deep}
    cyclic["self"] = cyclic
    copied = copy_params(cyclic)
    assert copied is not cyclic and copied["self"] is copied
    assert copied["shared"] is copied["again"] and copied["shared"] is not shared
    inner = copied["deep"]["x"]
    for _ in range(DEEP):
        inner = inner["a"]
    assert inner == [date(2024, 1, 2)]
    assert list(copied) == ["shared", "again", "deep", "self"]  # key order kept


def test_encode_json_and_params_digest_work_at_any_depth() -> None:
    deep = nested(DEEP)
    text = encode_json(deep)
    assert text == '{"x": ' + '{"a": ' * DEEP + "1" + "}" * (DEEP + 1)
    assert params_digest(deep) == params_digest(nested(DEEP))
    assert params_digest(deep) != params_digest(nested(DEEP, leaf=2))


VALUES = [
    {},
    [],
    {"b": [1, 2.5, None, True, False], "a": {"z": (), "y": ("t", {"é": "\x1b\u2028"})}},
    {3: "int key", 1.5: "float", True: "bool", None: "none", "s": math.inf},
    [float("nan"), -0.0, 10**30, 'quote" back\\slash', date(2024, 1, 2), {"nested": [[], {}]}],
]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("sort_keys", [False, True])
def test_the_iterative_encoding_is_exactly_json_dumps(value: Any, sort_keys: bool) -> None:
    if sort_keys and isinstance(value, dict) and any(not isinstance(k, str) for k in value):
        value = {str(k): v for k, v in value.items()}  # mixed key types cannot be sorted by either
    expected = json.dumps(value, sort_keys=sort_keys, ensure_ascii=False, default=str)
    assert _encode_iteratively(value, sort_keys) == expected


def test_the_iterative_encoding_refuses_cycles_and_bad_keys_like_json() -> None:
    cyclic: list[Any] = []
    cyclic.append([cyclic])
    with pytest.raises(ValueError, match="Circular reference"):
        _encode_iteratively(cyclic, False)
    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None, not tuple"):
        _encode_iteratively({(1, 2): 3}, False)
