"""MemoryStoreSuite: the conformance tests every memory store backend must pass.

Subclass it in a test module as ``Test...`` and implement :meth:`MemoryStoreSuite.make_store` (an empty store,
isolated from other tests); pytest runs every ``test_*`` method against that backend::

    class TestSQLiteMemoryStore(MemoryStoreSuite):
        @pytest.fixture(autouse=True)
        def _folder(self, tmp_path):
            self.path = tmp_path / "memories.db"

        def make_store(self):
            return SQLiteMemoryStore(self.path)

A backend whose ranking has no notion of rare words (PostgreSQL's ``ts_rank``) overrides
:meth:`MemoryStoreSuite.test_rarer_word_ranks_higher` with what it guarantees instead.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.stores.types import MESSAGE_ID_KEY, MemoryStore

__all__ = ["MemoryStoreSuite"]

ODD_QUERIES = [
    'green "tea', "tea OR coffee", "tea AND NOT coffee", "NEAR(green tea, 2)", "tea*", "-tea", "content:tea",
    "^tea", "(tea", "tea)", "{tea}", "[tea]", "'", '"', "''", "\\", "%", "_", "tea; DROP TABLE handrail_memories;--",
    "tea & coffee | !milk <-> x", "a:*", "*", "!", "", "   ", "\t\n", "🍵", "日本語のお茶", "thé vert à Paris",
    "x" * 5000, " ".join(f"w{i}" for i in range(300)),
]  # fmt: skip
"""Queries with full-text syntax, quotes, SQL and odd characters: none may raise."""


def _texts(messages: list[ChatMessage]) -> list[str | None]:
    return [m.text for m in messages]


class MemoryStoreSuite:
    """Conformance tests for :class:`~handrail.stores.types.MemoryStore` backends (a mixin; needs pytest)."""

    def make_store(self) -> Any:
        """Return a new, empty store of the backend under test (override this)."""
        raise NotImplementedError("Implement make_store() in the MemoryStoreSuite subclass.")

    def _store(self) -> Any:
        store = self.make_store()
        assert isinstance(store, MemoryStore)
        return store

    def _add(self, store: Any, *texts: str, **scope: Any) -> list[str]:
        ids: list[str] = store.add_memories(messages=[ChatMessage.from_user(t) for t in texts], **scope)
        return ids

    # adding

    def test_add_returns_one_id_per_message_with_text(self) -> None:
        """One memory per message with text; tool traffic and blank text are skipped; role and name kept."""
        store = self._store()
        call = ToolCall(tool_name="weather", arguments={"city": "Oslo"}, id="c1")
        messages = [
            ChatMessage.from_user("I live in Oslo"),
            ChatMessage.from_assistant(tool_calls=[call]),
            ChatMessage.from_tool("sunny", call),
            ChatMessage.from_user("   "),
            ChatMessage.from_assistant("Oslo is sunny today", name="bot"),
        ]
        ids = store.add_memories(messages=messages, user_id="ada")
        assert len(ids) == 2 and len(set(ids)) == 2 and all(isinstance(i, str) and i for i in ids)
        found = store.search_memories(user_id="ada", top_k=10)
        assert [(m.role.value, m.text, m.name) for m in found] == [
            ("assistant", "Oslo is sunny today", "bot"),
            ("user", "I live in Oslo", None),
        ]
        assert [m.meta["memory_id"] for m in found] == ids[::-1]

    def test_add_needs_an_id(self) -> None:
        """Adding needs at least one non-empty string id, and ChatMessage objects."""
        store = self._store()
        with pytest.raises(ConfigurationError, match="user_id, run_id or agent_id"):
            self._add(store, "orphan")
        with pytest.raises(ConfigurationError):
            self._add(store, "empty id", user_id="")
        with pytest.raises(ConfigurationTypeError):
            self._add(store, "wrong type", user_id=7)
        with pytest.raises(ConfigurationTypeError):
            store.add_memories(messages=["not a message"], user_id="ada")
        assert store.search_memories() == []

    def test_add_assigns_message_ids_in_place_and_skips_repeats(self) -> None:
        """Message ids are assigned in place; a message already stored in the same scope is skipped."""
        store = self._store()
        messages = [ChatMessage.from_user("I like tea"), ChatMessage.from_user("I like cake", meta={"k": 1})]
        first = store.add_memories(messages=messages, user_id="ada")
        assert len(first) == 2
        assert all(isinstance(m.meta[MESSAGE_ID_KEY], str) for m in messages)
        assert store.add_memories(messages=messages, user_id="ada") == []
        assert store.add_memories(messages=[messages[0], messages[0]], user_id="bob") != []
        assert len(store.search_memories(top_k=10)) == 3

    def test_add_is_all_or_nothing(self) -> None:
        """A message whose meta cannot be serialized fails the whole call: nothing is added."""
        store = self._store()
        bad = [ChatMessage.from_user("fine"), ChatMessage.from_user("not JSON", meta={"x": object()})]
        with pytest.raises(SerializationError):
            store.add_memories(messages=bad, user_id="ada")
        assert store.search_memories(user_id="ada") == []

    # scoping

    def test_scope_ids_are_anded(self) -> None:
        """user_id, run_id and agent_id narrow the search together; no id searches everything."""
        store = self._store()
        self._add(store, "one", user_id="u1", run_id="r1", agent_id="a1")
        self._add(store, "two", user_id="u1", run_id="r2", agent_id="a1")
        self._add(store, "three", user_id="u2", run_id="r1", agent_id="a2")
        self._add(store, "four", agent_id="a1")

        def found(**scope: Any) -> set[str | None]:
            return set(_texts(store.search_memories(top_k=10, **scope)))

        assert found(user_id="u1") == {"one", "two"}
        assert found(user_id="u1", run_id="r1") == {"one"}
        assert found(run_id="r1") == {"one", "three"}
        assert found(agent_id="a1") == {"one", "two", "four"}
        assert found(user_id="u2", agent_id="a1") == set()
        assert found(user_id="nobody") == set()
        assert found() == {"one", "two", "three", "four"}

    def test_query_stays_in_scope(self) -> None:
        """A query only finds memories of the given scope."""
        store = self._store()
        self._add(store, "Ada drinks green tea", user_id="ada")
        self._add(store, "Bob drinks green tea", user_id="bob")
        assert _texts(store.search_memories(query="green tea", user_id="bob")) == ["Bob drinks green tea"]

    # ranking and top_k

    def test_query_none_gives_the_most_recent(self) -> None:
        """Without a query the most recent memories come first."""
        store = self._store()
        for i in range(7):
            self._add(store, f"memory {i}", user_id="ada")
        assert _texts(store.search_memories(user_id="ada", top_k=3)) == ["memory 6", "memory 5", "memory 4"]

    def test_more_matching_words_rank_higher(self) -> None:
        """A memory matching more query words ranks above one matching fewer."""
        store = self._store()
        self._add(store, "Ada likes green tea with honey in the morning", user_id="ada")
        self._add(store, "Ada painted the fence green last summer", user_id="ada")
        self._add(store, "Ada's brother repairs old bicycles", user_id="ada")
        found = store.search_memories(query="Which green tea does Ada like?", user_id="ada")
        assert found[0].text == "Ada likes green tea with honey in the morning"
        found = store.search_memories(query="green tea honey", user_id="ada", include_memory_metadata=True)
        assert _texts(found) == [
            "Ada likes green tea with honey in the morning",
            "Ada painted the fence green last summer",
        ]
        assert found[0].meta["score"] > found[1].meta["score"] > 0

    def test_rarer_word_ranks_higher(self) -> None:
        """A memory matching a rare query word ranks above memories matching a common one."""
        store = self._store()
        for i in range(6):
            self._add(store, f"note {i}: the weather was fine", user_id="ada")
        self._add(store, "Ada's cat is called Turing", user_id="ada")
        self._add(store, "the weather was fine again", user_id="ada")
        found = store.search_memories(query="weather Turing", user_id="ada", top_k=3)
        assert found[0].text == "Ada's cat is called Turing"

    def test_only_matching_memories_are_returned(self) -> None:
        """A query returns only memories holding at least one of its words."""
        store = self._store()
        self._add(store, "Ada plays the cello", "Ada collects stamps", user_id="ada")
        assert _texts(store.search_memories(query="cello", user_id="ada")) == ["Ada plays the cello"]
        assert store.search_memories(query="trombone", user_id="ada") == []

    def test_top_k(self) -> None:
        """top_k caps the results (default 5); zero, negative and non-int values are refused."""
        store = self._store()
        for i in range(8):
            self._add(store, f"tea note {i}", user_id="ada")
        assert len(store.search_memories(query="tea", user_id="ada", top_k=3)) == 3
        assert len(store.search_memories(query="tea", user_id="ada", top_k=100)) == 8
        assert len(store.search_memories(query="tea", user_id="ada")) == 5
        for bad in (0, -1):
            with pytest.raises(ConfigurationError, match="top_k"):
                store.search_memories(query="tea", top_k=bad)
        for wrong in ("3", 2.5, True, None):
            with pytest.raises(ConfigurationTypeError, match="top_k"):
                store.search_memories(query="tea", top_k=wrong)

    # filters

    def _filtered_store(self) -> Any:
        store = self._store()
        store.add_memories(
            messages=[
                ChatMessage.from_user("likes pasta", meta={"topic": "food", "n": 1, "ok": True, "lang": "en"}),
                ChatMessage.from_assistant("noted: pasta", meta={"topic": "food", "n": 2, "ok": False}),
                ChatMessage.from_user("lives in Rome", meta={"topic": "place", "n": 1.0, "ok": None}),
            ],
            user_id="ada",
            run_id="r1",
        )
        self._add(store, "likes pizza", user_id="bob")
        return store

    @pytest.mark.parametrize(
        ("filters", "expected"),
        [
            ({"topic": "food"}, {"likes pasta", "noted: pasta"}),
            ({"role": "user"}, {"likes pasta", "lives in Rome", "likes pizza"}),
            ({"role": "assistant", "topic": "food"}, {"noted: pasta"}),
            ({"user_id": "bob"}, {"likes pizza"}),
            ({"run_id": "r1", "n": 1}, {"likes pasta", "lives in Rome"}),
            ({"ok": True}, {"likes pasta"}),
            ({"ok": False}, {"noted: pasta"}),
            ({"n": True}, set()),
            ({"lang": None}, {"noted: pasta", "lives in Rome", "likes pizza"}),
            ({"ok": None}, {"lives in Rome", "likes pizza"}),
            ({"meta.topic": "place"}, {"lives in Rome"}),
            ({"metadata.lang": "en"}, {"likes pasta"}),
            ({"topic": "nothing"}, set()),
            ({"field": "meta.topic", "operator": "==", "value": "food"}, {"likes pasta", "noted: pasta"}),
            (
                {
                    "operator": "AND",
                    "conditions": [
                        {"field": "meta.topic", "operator": "==", "value": "food"},
                        {"field": "role", "operator": "==", "value": "user"},
                    ],
                },
                {"likes pasta"},
            ),
            ({}, {"likes pasta", "noted: pasta", "lives in Rome", "likes pizza"}),
        ],
    )
    def test_filters(self, filters: dict[str, Any], expected: set[str]) -> None:
        """Equality filters on metadata keys and columns, flat or in Haystack's shape, with and without a query."""
        store = self._filtered_store()
        assert set(_texts(store.search_memories(filters=filters, top_k=10))) == expected
        with_query = set(_texts(store.search_memories(query="pasta pizza Rome", filters=filters, top_k=10)))
        assert with_query == expected

    @pytest.mark.parametrize(
        "filters",
        [
            {"topic": ["food"]},
            {"topic": {"$eq": "food"}},
            {"role": 1},
            {"": "x"},
            {"field": "meta.topic", "operator": ">", "value": 1},
            {"operator": "OR", "conditions": [{"field": "meta.topic", "operator": "==", "value": "food"}]},
            {"operator": "NOT", "conditions": []},
            {"operator": "AND", "conditions": ["topic"]},
            ["topic", "food"],
            "topic = food",
        ],
    )
    def test_unknown_filter_shapes_raise(self, filters: Any) -> None:
        """Filters other than equality on JSON scalars raise ConfigurationError."""
        store = self._filtered_store()
        with pytest.raises(ConfigurationError):
            store.search_memories(filters=filters)

    # results

    def test_meta_holds_only_the_memory_id_by_default(self) -> None:
        """Without include_memory_metadata a result's meta holds only memory_id."""
        store = self._store()
        (memory_id,) = store.add_memories(messages=[ChatMessage.from_user("tea", meta={"k": "v"})], user_id="ada")
        for query in (None, "tea"):
            (found,) = store.search_memories(query=query, user_id="ada")
            assert found.meta == {"memory_id": memory_id}

    def test_include_memory_metadata(self) -> None:
        """include_memory_metadata adds the scope ids, created_at, score and the original meta."""
        store = self._store()
        message = ChatMessage.from_assistant("Ada likes green tea", meta={"source": "chat", "turn": 3})
        (memory_id,) = store.add_memories(messages=[message], user_id="ada", agent_id="helper")
        for query, has_score in ((None, False), ("green tea", True)):
            (found,) = store.search_memories(query=query, user_id="ada", include_memory_metadata=True)
            meta = found.meta
            assert set(meta) == {"memory_id", "user_id", "run_id", "agent_id", "created_at", "score", "metadata"}
            assert (meta["memory_id"], meta["user_id"], meta["run_id"], meta["agent_id"]) == (
                memory_id, "ada", None, "helper",
            )  # fmt: skip
            assert datetime.fromisoformat(meta["created_at"]).utcoffset() is not None
            if has_score:
                assert isinstance(meta["score"], float) and meta["score"] > 0
            else:
                assert meta["score"] is None
            assert meta["metadata"] == {"source": "chat", "turn": 3, MESSAGE_ID_KEY: message.meta[MESSAGE_ID_KEY]}
            json.dumps(found.to_dict())

    @pytest.mark.parametrize("query", ODD_QUERIES)
    def test_odd_queries_do_not_raise(self, query: str) -> None:
        """Full-text syntax, quotes, SQL and odd characters in a query never raise."""
        store = self._store()
        self._add(store, "Ada drinks green tea", 'She said "NEAR(tea)" AND left; -- (really) 50% off', user_id="ada")
        found = store.search_memories(query=query, user_id="ada", top_k=5)
        assert all(isinstance(m, ChatMessage) for m in found)

    def test_odd_text_round_trips_and_matches(self) -> None:
        """Memories with quotes, operators, non-ASCII and control characters come back verbatim."""
        store = self._store()
        texts = [
            'She said "NEAR(tea, 2)" OR * AND -milk; DROP TABLE x;--',
            "Grüße aus München: Äpfel & Öl",
            "東京で抹茶を飲んだ",
            "emoji party 🎉🍵 with 'quotes' and \\ backslashes",
            "line one\nline two\ttabbed",
        ]
        self._add(store, *texts, user_id="ada")
        assert set(_texts(store.search_memories(user_id="ada", top_k=10))) == set(texts)
        assert _texts(store.search_memories(query='"NEAR(tea', user_id="ada")) == [texts[0]]
        assert _texts(store.search_memories(query="München?", user_id="ada")) == [texts[1]]
        assert _texts(store.search_memories(query="東京で抹茶を飲んだ", user_id="ada")) == [texts[2]]
        assert _texts(store.search_memories(query="party!", user_id="ada")) == [texts[3]]
        assert _texts(store.search_memories(query="tabbed", user_id="ada")) == [texts[4]]

    def test_query_must_be_text(self) -> None:
        """A query that is not a string is a type error."""
        store = self._store()
        with pytest.raises(ConfigurationTypeError):
            store.search_memories(query=42)

    # deleting

    def test_delete_memory(self) -> None:
        """delete_memory removes one memory; unknown ids are not an error."""
        store = self._store()
        keep, drop = self._add(store, "keep the tea", "drop the tea", user_id="ada")
        store.delete_memory(drop)
        store.delete_memory(drop)
        store.delete_memory("no-such-memory")
        assert [m.meta["memory_id"] for m in store.search_memories(query="tea", user_id="ada")] == [keep]
        assert [m.meta["memory_id"] for m in store.search_memories(user_id="ada")] == [keep]
        with pytest.raises(ConfigurationTypeError):
            store.delete_memory(5)

    def test_delete_all_memories_in_a_scope(self) -> None:
        """delete_all_memories with ids deletes that scope only and returns the count."""
        store = self._store()
        self._add(store, "a", "b", user_id="u1", run_id="r1")
        self._add(store, "c", user_id="u1", run_id="r2")
        self._add(store, "d", user_id="u2", run_id="r1")
        assert store.delete_all_memories(user_id="u1", run_id="r1") == 2
        assert set(_texts(store.search_memories(top_k=10))) == {"c", "d"}
        assert store.delete_all_memories(run_id="r1") == 1
        assert store.delete_all_memories(user_id="nobody") == 0
        assert _texts(store.search_memories(top_k=10)) == ["c"]
        assert store.search_memories(query="d") == []

    def test_delete_all_memories_without_scope(self) -> None:
        """delete_all_memories without ids deletes everything."""
        store = self._store()
        self._add(store, "a tea", user_id="u1")
        self._add(store, "b tea", agent_id="x")
        assert store.delete_all_memories() == 2
        assert store.search_memories(top_k=10) == []
        assert store.search_memories(query="tea") == []
        assert store.delete_all_memories() == 0
        with pytest.raises(ConfigurationError):
            store.delete_all_memories(user_id="")

    def test_memories_can_be_added_after_deleting(self) -> None:
        """A deleted message can be added again."""
        store = self._store()
        message = ChatMessage.from_user("tea again")
        store.add_memories(messages=[message], user_id="ada")
        store.delete_all_memories(user_id="ada")
        assert len(store.add_memories(messages=[message], user_id="ada")) == 1
        assert _texts(store.search_memories(query="tea", user_id="ada")) == ["tea again"]

    # serialization

    def test_to_dict_from_dict(self) -> None:
        """to_dict is JSON and from_dict rebuilds an equivalent store."""
        store = self._store()
        data = store.to_dict()
        assert set(data) == {"type", "init_parameters"}
        assert data["type"] == f"{type(store).__module__}.{type(store).__qualname__}"
        json.dumps(data)
        rebuilt = type(store).from_dict(json.loads(json.dumps(data)))
        assert type(rebuilt) is type(store)
        assert rebuilt.to_dict() == data
        assert isinstance(rebuilt, MemoryStore)
