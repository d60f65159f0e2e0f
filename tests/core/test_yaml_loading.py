"""Reading YAML safely: duplicate keys and alias bombs refused (Pipeline.loads and the shared loader)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from handrail.core._yaml import YamlRefusedError, safe_load_yaml
from handrail.core.pipeline import Pipeline
from handrail.errors import SerializationError
from tests.core.test_pipeline_io import ALLOW, expected_dict


def alias_bomb(levels: int = 8, *, first_line: str = "") -> str:
    """Nested anchors, each level repeating the previous one ten times ("billion laughs")."""
    rows = ["  - &a0 [" + ", ".join(["lol"] * 10) + "]"]
    rows += [f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return first_line + "metadata:\n  defs:\n" + "\n".join(f"  {row}" for row in rows) + "\n"


def test_an_alias_bomb_is_refused_naming_the_line_of_the_first_alias() -> None:
    text = alias_bomb(first_line="max_runs_per_component: 3\n")  # the first alias (*a0) is on line 5
    with pytest.raises(SerializationError) as caught:
        Pipeline.loads(text, allowed_modules=ALLOW)
    message = str(caught.value)
    assert "Cannot read the pipeline YAML: line 5: YAML aliases expand this document to more than" in message
    assert "aliases may add at most 100,000" in message


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(SerializationError, match="line 2: YAML aliases expand this document without end"):
        Pipeline.loads("metadata:\n  loop: &a [1, *a]\n")


def test_the_limit_counts_the_nodes_aliases_add() -> None:
    block = "base: &b [1, 2, 3, 4]\n"  # the sequence is 5 nodes; each alias of it adds 5
    twice = block + "copies: [*b, *b]\n"
    assert safe_load_yaml(twice, max_alias_nodes=10)[0] == {"base": [1, 2, 3, 4], "copies": [[1, 2, 3, 4]] * 2}
    with pytest.raises(YamlRefusedError) as caught:
        safe_load_yaml(twice, max_alias_nodes=9)
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line == 1
    big = "items: [" + ", ".join(str(i) for i in range(500)) + "]\n"  # no aliases: never limited
    assert safe_load_yaml(big, max_alias_nodes=1)[0] == {"items": list(range(500))}


def test_ordinary_anchors_aliases_and_merges_still_work() -> None:
    data = expected_dict()
    text = (
        "metadata:\n"
        "  defaults: &defaults {owner: team, tags: [a, b]}\n"
        "  first: *defaults\n"
        "  second: *defaults\n"
        "  third:\n"
        "    <<: *defaults\n"
        "    owner: other\n"  # a merged key may be overridden
        + yaml.safe_dump({k: v for k, v in data.items() if k != "metadata"}, sort_keys=False)
    )
    expected = yaml.safe_load(text)
    assert safe_load_yaml(text)[0] == expected
    pipeline = Pipeline.loads(text, allowed_modules=ALLOW)
    assert pipeline.metadata["third"] == {"owner": "other", "tags": ["a", "b"]}
    assert pipeline.metadata["first"] == pipeline.metadata["second"] == {"owner": "team", "tags": ["a", "b"]}


def test_a_key_given_twice_is_refused_naming_the_line_and_the_key() -> None:
    text = "max_runs_per_component: 3\ncomponents: {}\nmax_runs_per_component: 5\n"
    with pytest.raises(SerializationError) as caught:
        Pipeline.loads(text)
    assert str(caught.value) == (
        "Cannot read the pipeline YAML: line 3: the key 'max_runs_per_component' appears twice in one mapping "
        "(first on line 1)"
    )


@pytest.mark.parametrize(
    ("text", "line", "first", "key"),
    [
        ("metadata:\n  owner: a\n  owner: b\n", 3, 2, "'owner'"),
        ('metadata:\n  owner: a\n  "owner": b\n', 3, 2, "'owner'"),  # quoted or not, the same key
        ("metadata: {1: a, 0x1: b}\n", 1, 1, "1"),  # the same number
        ("metadata:\n  - {x: 1}\n  - {y: 1, y: 2}\n", 3, 3, "'y'"),  # nested in a list
        ("base: &b {x: 1}\nother:\n  <<: *b\n  y: 1\n  y: 2\n", 5, 4, "'y'"),  # a merge does not hide it
    ],
)
def test_duplicate_keys_anywhere_are_refused(text: str, line: int, first: int, key: str) -> None:
    with pytest.raises(YamlRefusedError) as caught:
        safe_load_yaml(text)
    assert caught.value.problem == f"the key {key} appears twice in one mapping (first on line {first})"
    assert caught.value.problem_mark is not None and caught.value.problem_mark.line + 1 == line


@pytest.mark.parametrize("text", ["!!python/object/apply:os.system ['true']\n", "a: !!python/name:os.system\n"])
def test_python_tags_are_still_refused(text: str) -> None:
    with pytest.raises(yaml.YAMLError, match="could not determine a constructor"):
        safe_load_yaml(text)


def test_empty_and_plain_documents_read_as_safe_load_does() -> None:
    assert safe_load_yaml("") == (None, None)
    text = "a: 1\nb: [x, {c: 2.5, d: null}]\nwhen: 2024-01-02\n"
    data: Any = safe_load_yaml(text)[0]
    assert data == yaml.safe_load(text)


def test_nesting_past_the_recursion_limit_is_refused_not_a_crash() -> None:
    text = "a: " + "[" * 5000 + "]" * 5000
    with pytest.raises(YamlRefusedError, match="nested too deeply"):
        safe_load_yaml(text)
    with pytest.raises(SerializationError, match="nested too deeply"):
        Pipeline.loads(text)
    assert safe_load_yaml("a: " + "[" * 50 + "]" * 50)[0] is not None  # ordinary nesting still loads


def test_a_merge_key_given_twice_is_refused() -> None:
    with pytest.raises(YamlRefusedError, match=r"merge key '<<' appears twice .*first on line 2"):
        safe_load_yaml("confirmation:\n  <<: {calculator: always}\n  <<: {calculator: never}\n")
    assert safe_load_yaml("b: &b {x: 1}\nc: &c {y: 2}\nd:\n  <<: [*b, *c]\n")[0]["d"] == {"x": 1, "y": 2}


@pytest.mark.parametrize(
    ("text", "line"),
    [("a: 1\nb: " + "9" * 5000, 2), ("a: [1, -" + "9" * 5000 + "]", 1), ("? " + "9" * 5000 + "\n: x", 1)],
    ids=["value", "in-a-list", "key"],
)
def test_an_int_of_more_digits_than_python_builds_is_refused_at_its_line(text: str, line: int) -> None:
    with pytest.raises(YamlRefusedError, match=r"integer of 5,00[01] characters is refused") as info:
        safe_load_yaml(text)
    assert info.value.problem_mark is not None and info.value.problem_mark.line + 1 == line


def test_a_pipeline_with_an_int_of_too_many_digits_is_a_serialization_error() -> None:
    text = "max_runs_per_component: " + "9" * 5000 + "\ncomponents: {}\nconnections: []\n"
    with pytest.raises(SerializationError, match="line 1: an integer of 5,000 characters is refused"):
        Pipeline.loads(text)


@pytest.mark.parametrize(
    "digits",
    ["0x" + "f" * 20_000, "0" + "7" * 20_000, "0b" + "1" * 50_000, "-0x" + "f" * 20_000, "1" + ":59" * 3_000],
    ids=["hex", "octal", "binary", "negative-hex", "sexagesimal"],
)
def test_an_int_json_cannot_write_is_refused_at_its_line_in_any_base(digits: str) -> None:
    with pytest.raises(
        YamlRefusedError, match=r"integer of [\d,]+ characters is refused \(an integer of more than"
    ) as info:
        safe_load_yaml("a: 1\nb: " + digits + "\n")
    assert info.value.problem_mark is not None and info.value.problem_mark.line + 1 == 2


def test_a_hex_int_json_can_write_still_loads() -> None:
    # YAML 1.1 (PyYAML) writes octal as 017; 0o17 is a string there, whatever its length.
    assert safe_load_yaml("a: 0x" + "f" * 100 + "\nb: 0b101\nc: 017\nd: 1:30\ne: 0o" + "7" * 20_000 + "\n")[0] == {
        "a": int("f" * 100, 16), "b": 5, "c": 15, "d": 90, "e": "0o" + "7" * 20_000,
    }  # fmt: skip


def test_a_pipeline_with_a_huge_hex_int_is_a_serialization_error() -> None:
    text = "max_runs_per_component: 0x" + "f" * 50_000 + "\ncomponents: {}\nconnections: []\n"
    with pytest.raises(SerializationError, match="line 1: an integer of 50,002 characters is refused"):
        Pipeline.loads(text)
