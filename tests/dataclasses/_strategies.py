"""Hypothesis strategies shared by the dataclasses tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from handrail.dataclasses.chat_message import call_id_problem

# Text of any Unicode letters, marks, symbols (emoji included), digits, punctuation and whitespace;
# hypothesis never generates lone surrogates here, so every value encodes to UTF-8.
any_text = st.text(max_size=60)

# A few fixed non-ASCII samples are always mixed in so every run covers them, not only lucky ones.
non_ascii_samples = st.sampled_from(
    [
        "città",
        "Ünïcödé",
        "日本語のテキスト",
        "emoji 🍎🚀👩‍👩‍👧",
        "עברית",
        "\u00a0nbsp",
        "tab\tnewline\n",
        '"quotes" \\ back',
    ]
)
texts = st.one_of(any_text, non_ascii_samples)
call_ids = texts.filter(lambda t: call_id_problem(t) is None)
"""Call ids a ToolCall takes: text a person can read and type back (others are refused, as tested)."""

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)

json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(texts, children, max_size=4),
    ),
    max_leaves=12,
)

argument_dicts: st.SearchStrategy[dict[str, Any]] = st.dictionaries(texts, json_values, max_size=5)
