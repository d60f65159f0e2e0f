"""Hypothesis strategies that damage a valid document: values of the wrong type, keys dropped, keys added.

Shared by the property-based tests of agent files and pipeline files (and any other file format): a
valid document is walked, one to three paths are picked, and each is replaced by a value of some other
type (None, a bool, a number, a string, a list, a mapping, nested ones), removed, or given an unknown key.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

__all__ = ["HUGE_INT_WORD", "mutated", "paths_of", "with_huge_ints", "wrong_values"]

Path = tuple[str | int, ...]

# No '/' or '.' in generated text: a damaged search folder must not become '/' or '..' (a walk of the disk).
_ALPHABET = "abcXYZ019 _-:{}[]#*&!|>'\"%@`,?=~é🍎\x00\n"
HUGE_INT_WORD = "hugeint5000"
"""A word in the pool that :func:`with_huge_ints` turns into an integer of 5,000 digits in YAML text (more than
Python builds from text, and more than a dumper writes, so it is put in after dumping)."""

_WORDS = [HUGE_INT_WORD, "", "text", "llama_cpp", "openai", "always", "never", "once", "user", "assistant", "tool",
          "system", "calculator", "search", "handrail.testing.ScriptedChatGenerator", "handrail.tools.tool.Tool",
          "{{ replies }}", "{{ 1/0 }}", "list[int]", "typing.Any", "no.such.module", "os.system"]  # fmt: skip

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=_ALPHABET, max_size=12),
    st.sampled_from(_WORDS),
)

wrong_values: st.SearchStrategy[Any] = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_ALPHABET, max_size=6)), inner, max_size=3),
    ),
    max_leaves=6,
)
"""Values of every YAML type, nested a little."""


def paths_of(node: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path below ``node`` (keys of mappings, indexes of lists), parents before children."""
    items: list[tuple[str | int, Any]]
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    else:
        return
    for key, child in items:
        yield (*prefix, key)
        yield from paths_of(child, (*prefix, key))


def _parent(doc: Any, path: Path) -> Any:
    for key in path[:-1]:
        doc = doc[key]
    return doc


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (deep-copied) with one to three of its values replaced, removed or given an unknown key."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = list(paths_of(doc))
        op = draw(st.sampled_from(["replace", "replace", "delete", "add"])) if paths else "add"
        if op == "add":
            mappings = [p for p in [(), *paths] if isinstance(_get(doc, p), dict)]
            target = _get(doc, draw(st.sampled_from(mappings))) if mappings else doc
            target[draw(st.sampled_from(["surprise", "type", "init_parameters", "name", "replies", "tools"]))] = draw(
                wrong_values
            )
            continue
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        if op == "delete":
            del parent[path[-1]]
            continue
        value = draw(wrong_values)
        if not _same(value, parent[path[-1]]):
            parent[path[-1]] = value
    return doc


def _get(doc: Any, path: Path) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def with_huge_ints(text: str) -> str:
    """Block-style YAML text with each plain :data:`HUGE_INT_WORD` value (``key: word``, ``- word``) written as an
    integer of 5,000 digits (keys stay: a plain key may not be that long)."""
    return re.sub(rf"(?<=: |- ){HUGE_INT_WORD}$", "9" * 5000, text, flags=re.MULTILINE)
