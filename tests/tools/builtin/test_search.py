from __future__ import annotations

import copy
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handrail.core.serialization import object_from_dict
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.tools import Tool, Toolset
from handrail.tools.builtin import SearchTool, make_search_tool, search
from handrail.tools.builtin._passages import (
    MAX_PASSAGE_CHARS,
    Passage,
    read_folder,
    read_package_corpus,
    split_passages,
)
from handrail.tools.builtin.search import DEFAULT_SEARCH_DESCRIPTION, match_expression

SOURCE = re.compile(r"^\[([^\]]+)\]", re.MULTILINE)


def sources(text: str) -> list[str]:
    return SOURCE.findall(text)


def size(passage: Passage) -> int:
    """A passage's length as the model sees it: the heading, a line break, the text."""
    return (len(passage.heading) + 1 if passage.heading else 0) + len(passage.text)


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    (tmp_path / "apples.md").write_text(
        "# Apples\n\nApples grow on trees. A Honeycrisp apple weighs about 200 grams.\n", encoding="utf-8"
    )
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pears.txt").write_text("Pears are sweet.\n\nA pear tree lives 50 years.", encoding="utf-8")
    (tmp_path / "ignored.py").write_text("apples = 'not indexed'", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "apples.md").write_text("hidden apples", encoding="utf-8")
    return tmp_path


# --------------------------------------------------------------------------- the shipped corpus


class TestShippedCorpus:
    @pytest.mark.parametrize(
        ("query", "expected_file"),
        [
            ("Find information about Haystack", "haystack.md"),
            ("What is the population density of Maplebrook?", "maplebrook.md"),
            ("Maplebrook area square kilometres", "maplebrook.md"),
            ("price of a desk lamp", "price_list.md"),
            ("AskOncePolicy approval", "handrail.md"),
            ("snapshot ledger", "handrail.md"),
            ("speed of light", "earth_moon_sun.md"),
            ("How many kilometres is a mile?", "units.md"),
            ("marathon distance", "marathon.md"),
        ],
    )
    def test_finds_the_right_file_first(self, query: str, expected_file: str) -> None:
        assert sources(search.invoke(query=query))[0] == expected_file

    def test_the_demo_figures_come_back_in_one_passage(self) -> None:
        first = search.invoke(query="Maplebrook population area").split("\n\n")[0]
        assert "48213" in first and "12.7" in first

    def test_has_a_handful_of_short_documents(self) -> None:
        documents = read_package_corpus()
        assert 5 <= len(documents) <= 10
        assert all(name.endswith(".md") for name, _ in documents)
        for name, text in documents:
            assert all(size(p) <= MAX_PASSAGE_CHARS for p in split_passages(name, text))

    def test_default_spec(self) -> None:
        assert isinstance(search, Tool)
        assert search.name == "search"
        assert search.description == DEFAULT_SEARCH_DESCRIPTION
        assert search.parameters["required"] == ["query"]
        assert search.folder is None and search.top_k == 3
        assert search.arguments_error({"query": "x"}) is None
        assert search.arguments_error({}) is not None


# --------------------------------------------------------------------------- results


class TestResults:
    def test_top_k_is_respected(self) -> None:
        for k in (1, 2, 5):
            assert len(sources(make_search_tool(top_k=k).invoke(query="Maplebrook Haystack handrail"))) == k

    def test_each_passage_names_its_file_then_heading(self) -> None:
        text = make_search_tool(top_k=1).invoke(query="Heron Park")
        assert text.splitlines()[0] == "[maplebrook.md] Maplebrook > Geography"
        assert "86 hectares" in text

    def test_no_match(self) -> None:
        assert search.invoke(query="zyzzyva") == 'No results for "zyzzyva". Try other or fewer keywords.'

    @pytest.mark.parametrize("query", ["", "   ", "?!", "***", '""', "()", "_"])
    def test_a_query_without_words(self, query: str) -> None:
        assert search.invoke(query=query).startswith(f'No results for "{query}"')

    def test_stemming_matches_other_word_forms(self) -> None:
        assert sources(search.invoke(query="populations"))[0] == "maplebrook.md"

    def test_stop_words_alone_still_search(self) -> None:
        assert match_expression("what is the") == '"what" OR "is" OR "the"'

    @pytest.mark.parametrize(
        "query",
        [
            'Haystack "pipelines',
            '"unbalanced',
            "hay*",
            "*",
            "-haystack",
            "haystack -deepset",
            "NEAR(haystack deepset)",
            "haystack NEAR deepset",
            "haystack AND",
            "AND OR NOT",
            "(haystack",
            "haystack)",
            "heading: haystack",
            "source:haystack.md",
            "^haystack",
            "haystack + deepset",
            "{heading text}: haystack",
            "'single' quotes",
            "back\\slash",
            "null\x00byte",
            "émigré Zürich naïve",
            "日本語のテキスト",
            "x" * 5000,
            " ".join(f"word{i}" for i in range(500)),
        ],
    )
    def test_fts_syntax_in_queries_never_raises(self, query: str) -> None:
        assert isinstance(search.invoke(query=query), str)

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=80))
    def test_any_text_is_a_valid_query(self, query: str) -> None:
        assert isinstance(search.invoke(query=query), str)

    def test_match_expression_quotes_every_word(self) -> None:
        assert match_expression('What is "Haystack" AND (NEAR pipelines*)?') == '"haystack" OR "near" OR "pipelines"'
        assert match_expression("a_b c-d") == '"b" OR "c" OR "d"'
        assert match_expression("") is None
        expression = match_expression(" ".join(f"w{i}" for i in range(100)))
        assert expression is not None and expression.count(" OR ") == 31


# --------------------------------------------------------------------------- custom folders


class TestCustomFolder:
    def test_searches_md_and_txt_recursively(self, notes: Path) -> None:
        tool = make_search_tool(notes)
        assert sources(tool.invoke(query="Honeycrisp"))[0] == "apples.md"
        assert "sub/pears.txt" in sources(tool.invoke(query="pear tree years"))

    def test_skips_other_files_and_hidden_folders(self, notes: Path) -> None:
        assert [name for name, _ in read_folder(notes)] == ["apples.md", "sub/pears.txt"]
        assert sources(make_search_tool(notes, top_k=10).invoke(query="apples")) == ["apples.md"]

    def test_accepts_str_and_path(self, notes: Path) -> None:
        assert make_search_tool(str(notes)) == make_search_tool(notes)

    def test_an_empty_folder_gives_no_results(self, tmp_path: Path) -> None:
        assert make_search_tool(tmp_path).invoke(query="anything").startswith('No results for "anything"')

    def test_invalid_utf8_is_replaced(self, tmp_path: Path) -> None:
        (tmp_path / "odd.txt").write_bytes(b"caf\xe9 latte costs 3 euros")
        assert "latte" in make_search_tool(tmp_path).invoke(query="latte")

    def test_the_folder_is_read_once(self, notes: Path) -> None:
        tool = make_search_tool(notes)
        tool.warm_up()
        (notes / "late.md").write_text("Kumquats arrived late.", encoding="utf-8")
        assert tool.invoke(query="kumquats").startswith("No results")
        assert make_search_tool(notes).invoke(query="kumquats").startswith("[late.md]")

    def test_a_symlinked_folder_loop_terminates(self, notes: Path) -> None:
        try:
            (notes / "sub" / "loop").symlink_to(notes, target_is_directory=True)
        except OSError:  # pragma: no cover - platforms without symlinks
            pytest.skip("symlinks not available")
        assert "apples.md" in sources(make_search_tool(notes).invoke(query="Honeycrisp"))

    def test_custom_name_and_description(self, notes: Path) -> None:
        tool = make_search_tool(notes, name="notes", description="Search my notes.")
        assert (tool.name, tool.description) == ("notes", "Search my notes.")

    @pytest.mark.parametrize(
        ("kwargs", "error", "message"),
        [
            ({"folder": "/no/such/folder"}, ConfigurationError, "does not exist"),
            ({"top_k": 0}, ConfigurationError, "at least 1"),
            ({"top_k": "3"}, ConfigurationTypeError, "top_k must be an int"),
            ({"top_k": True}, ConfigurationTypeError, "top_k must be an int"),
            ({"folder": 5}, ConfigurationTypeError, "folder must be a str or a path"),
            ({"name": ""}, ConfigurationError, "must not be empty"),
        ],
    )
    def test_misuse_is_refused_at_construction(
        self, kwargs: dict[str, object], error: type[Exception], message: str
    ) -> None:
        with pytest.raises(error, match=message):
            make_search_tool(**kwargs)  # type: ignore[arg-type]

    def test_a_file_is_not_a_folder(self, notes: Path) -> None:
        with pytest.raises(ConfigurationError, match="not a directory"):
            make_search_tool(notes / "apples.md")


# --------------------------------------------------------------------------- threads


class TestConcurrency:
    def test_first_calls_from_many_threads_build_one_index(self, notes: Path) -> None:
        tool = make_search_tool(notes)
        barrier = threading.Barrier(8)

        def run(i: int) -> str:
            barrier.wait()
            return str(tool.invoke(query="Honeycrisp" if i % 2 else "pear"))

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(run, range(64)))
        for i, text in enumerate(results):
            assert sources(text)[0] == ("apples.md" if i % 2 else "sub/pears.txt")

    async def test_invoke_async_runs_in_a_worker_thread(self) -> None:
        text = await make_search_tool(top_k=1).invoke_async(query="Haystack deepset")
        assert sources(text) == ["haystack.md"]


# --------------------------------------------------------------------------- serialization


class TestSerialization:
    def test_the_default_tool_round_trips(self) -> None:
        data = search.to_dict()
        assert data == {
            "type": "handrail.tools.builtin.search.SearchTool",
            "init_parameters": {
                "folder": None,
                "top_k": 3,
                "name": "search",
                "description": DEFAULT_SEARCH_DESCRIPTION,
            },
        }
        restored = object_from_dict(data)
        assert isinstance(restored, SearchTool)
        assert restored == search
        assert restored is not search

    def test_a_custom_folder_round_trips(self, notes: Path) -> None:
        tool = make_search_tool(notes, top_k=1, name="notes", description="My notes.")
        data = tool.to_dict()
        assert data["init_parameters"]["folder"] == str(notes)
        snapshot = copy.deepcopy(data)
        restored = SearchTool.from_dict(data)
        assert data == snapshot
        assert restored == tool
        assert restored.invoke(query="Honeycrisp") == tool.invoke(query="Honeycrisp")

    def test_round_trips_inside_a_toolset(self, notes: Path) -> None:
        from handrail.tools.builtin import calculator

        toolset = Toolset([calculator, make_search_tool(notes)])
        restored = Toolset.from_dict(toolset.to_dict())
        assert restored == toolset
        assert [type(t) for t in restored] == [Tool, SearchTool]

    def test_tool_from_dict_dispatches_to_the_subclass(self) -> None:
        restored = SearchTool.from_dict(search.to_dict())
        assert isinstance(restored, SearchTool)

    @pytest.mark.parametrize(
        "data",
        [
            {"type": "handrail.tools.builtin.search.SearchTool"},
            {"type": "handrail.tools.builtin.search.SearchTool", "init_parameters": {"function": "x.y"}},
        ],
    )
    def test_malformed_data(self, data: dict[str, object]) -> None:
        with pytest.raises(SerializationError):
            SearchTool.from_dict(data)

    def test_equality_and_copies(self, notes: Path) -> None:
        tool = make_search_tool(notes)
        assert tool == make_search_tool(notes)
        assert tool != make_search_tool(notes, top_k=4)
        assert tool != make_search_tool()
        assert tool != "search"
        clone = copy.deepcopy(tool)
        assert clone == tool and clone is not tool
        assert copy.copy(tool) == tool
        assert "top_k=3" in repr(tool)


# --------------------------------------------------------------------------- passages


_MARKDOWN = st.lists(
    st.one_of(
        st.text(max_size=400),
        st.just(""),
        st.just("```"),
        st.builds(lambda level, title: "#" * level + " " + title, st.integers(1, 7), st.text(min_size=1, max_size=300)),
    ),
    max_size=30,
).map("\n".join)


class TestPassages:
    def test_headings_nest_and_reset(self) -> None:
        text = "# A\n\nintro\n\n## B\n\nbee\n\n### C\n\nsea\n\n## D\n\ndee"
        assert [(p.heading, p.text) for p in split_passages("x.md", text)] == [
            ("A", "intro"),
            ("A > B", "bee"),
            ("A > B > C", "sea"),
            ("A > D", "dee"),
        ]

    def test_short_paragraphs_of_a_section_are_packed_together(self) -> None:
        passages = split_passages("x.md", "# T\n\none.\n\ntwo.\n\nthree.")
        assert [p.text for p in passages] == ["one.\n\ntwo.\n\nthree."]

    def test_long_paragraphs_split_at_sentences_then_words(self) -> None:
        sentence = "This sentence has exactly some words in it. "
        long_word = "x" * 1500
        text = "# Long\n\n" + sentence * 40 + "\n\n" + long_word
        passages = split_passages("x.md", text, max_chars=300)
        assert len(passages) > 5
        for p in passages:
            assert size(p) <= 300
        assert "".join(p.text for p in passages).count("x") >= 1500

    @pytest.mark.parametrize("budget", [100, 300, 600])
    def test_a_long_heading_is_shortened_from_the_front(self, budget: int) -> None:
        text = "# " + "word " * 100 + "end\n\n## Last\n\n" + "Body text. " * 30
        for passage in split_passages("x.md", text, max_chars=budget):
            assert passage.heading.endswith("end > Last")
            assert size(passage) <= budget

    def test_code_fences_are_kept_whole(self) -> None:
        text = "# Code\n\n```python\n# not a heading\n\nprint(1)\n```\n"
        (passage,) = split_passages("x.md", text)
        assert passage.heading == "Code"
        assert "# not a heading" in passage.text

    def test_plain_text_has_no_heading(self) -> None:
        assert [(p.heading, p.text) for p in split_passages("x.txt", "one\n\ntwo")] == [("", "one\n\ntwo")]

    def test_an_empty_document_has_no_passages(self) -> None:
        assert split_passages("x.md", "\n\n   \n") == []

    @given(_MARKDOWN, st.integers(100, 800))
    def test_every_passage_fits_its_budget(self, text: str, budget: int) -> None:
        for passage in split_passages("x.md", text, max_chars=budget):
            assert size(passage) <= budget
            assert passage.text.strip()


@pytest.mark.parametrize(
    ("limit", "match"),
    [("MAX_FOLDER_ENTRIES", "holds more than 3 files"), ("MAX_FOLDER_BYTES", "hold more than 10 bytes")],
)
def test_a_folder_too_large_to_read_into_memory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, match: str
) -> None:
    from handrail.tools.builtin import _passages

    monkeypatch.setattr(_passages, limit, 3 if limit == "MAX_FOLDER_ENTRIES" else 10)
    for i in range(5):
        (tmp_path / f"doc{i}.md").write_text(f"# Doc {i}\n\nSome text about topic {i}.\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=match):
        _passages.read_folder(tmp_path)
