from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from handrail.core.secret import Secret
from handrail.dataclasses.chat_message import ChatMessage
from handrail.errors import ConfigurationError, SerializationError, StoreError
from handrail.stores.memory_postgres import PostgresMemoryStore
from handrail.testing.store_suites.memory import MemoryStoreSuite

pytestmark = pytest.mark.postgres


class TestPostgresMemoryStore(MemoryStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> Iterator[None]:
        self.dsn = postgres_dsn
        self.stores: list[PostgresMemoryStore] = []
        yield
        for store in self.stores:
            store.close()

    def make_store(self) -> PostgresMemoryStore:
        store = PostgresMemoryStore(self.dsn)
        self.stores.append(store)
        return store

    def test_rarer_word_ranks_higher(self) -> None:
        # ts_rank weighs term frequency and length, not rarity: every memory holding a query word is found.
        store = self._store()
        for i in range(6):
            store.add_memories(messages=[ChatMessage.from_user(f"note {i}: the weather was fine")], user_id="ada")
        store.add_memories(messages=[ChatMessage.from_user("Ada's cat is called Turing")], user_id="ada")
        store.add_memories(messages=[ChatMessage.from_user("Ada repairs bicycles")], user_id="ada")
        found = store.search_memories(query="weather Turing", user_id="ada", top_k=10, include_memory_metadata=True)
        assert len(found) == 7 and "Ada's cat is called Turing" in [m.text for m in found]
        assert all(m.meta["score"] > 0 for m in found)


@pytest.fixture
def stores(postgres_dsn: str) -> Iterator[list[PostgresMemoryStore]]:
    made: list[PostgresMemoryStore] = []
    yield made
    for store in made:
        store.close()


def _store(stores: list[PostgresMemoryStore], dsn: str | Secret, **options: object) -> PostgresMemoryStore:
    store = PostgresMemoryStore(dsn, **options)  # type: ignore[arg-type]
    stores.append(store)
    return store


def _add(store: PostgresMemoryStore, *texts: str, user_id: str = "ada") -> list[str]:
    return store.add_memories(messages=[ChatMessage.from_user(t) for t in texts], user_id=user_id)


def test_english_configuration_stems_words(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    english = _store(stores, postgres_dsn, text_search_config="english")
    _add(english, "She was running marathons in the mountains")
    assert [m.text for m in english.search_memories(query="run a marathon")] == [
        "She was running marathons in the mountains"
    ]
    assert english.search_memories(query="the was") == []  # stop words only
    simple = _store(stores, postgres_dsn)
    _add(simple, "Bob keeps running marathons", user_id="bob")
    assert simple.search_memories(query="run marathon", user_id="bob") == []
    assert [m.text for m in simple.search_memories(query="running", user_id="bob")] == ["Bob keeps running marathons"]


def test_memories_persist_across_stores(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    _add(_store(stores, postgres_dsn), "Ada's cat is called Turing")
    again = PostgresMemoryStore.from_dict(_store(stores, postgres_dsn).to_dict())
    stores.append(again)
    assert [m.text for m in again.search_memories(query="cat", user_id="ada")] == ["Ada's cat is called Turing"]


def test_an_unreachable_server_names_the_store() -> None:
    store = PostgresMemoryStore("postgresql://app:s3cret@127.0.0.1:1/nowhere", timeout=1)
    with pytest.raises(StoreError, match=r"PostgresMemoryStore.*127\.0\.0\.1:1") as info:
        store.search_memories(query="tea")
    assert "s3cret" not in str(info.value)
    store.close()


def test_a_newer_schema_version_is_refused(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    import psycopg

    _add(_store(stores, postgres_dsn), "tea")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        row = conn.execute("SELECT version FROM handrail_schema WHERE store = 'PostgresMemoryStore'").fetchone()
        assert row is not None
        conn.execute("UPDATE handrail_schema SET version = 99 WHERE store = 'PostgresMemoryStore'")
    try:
        with pytest.raises(StoreError, match=r"PostgresMemoryStore.*schema version 99"):
            _store(stores, postgres_dsn).search_memories(query="tea")
    finally:
        with psycopg.connect(postgres_dsn, autocommit=True) as conn:
            conn.execute("UPDATE handrail_schema SET version = %s WHERE store = 'PostgresMemoryStore'", (row[0],))


def test_a_corrupt_row_names_the_memory(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    import psycopg

    store = _store(stores, postgres_dsn)
    (memory_id,) = _add(store, "tea")
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE handrail_memories SET role = 'wizard'")
    with pytest.raises(StoreError, match=f"PostgresMemoryStore.*{memory_id}"):
        store.search_memories(query="tea")


def test_text_postgres_cannot_hold_is_refused_whole(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    store = _store(stores, postgres_dsn)
    with pytest.raises(StoreError, match="PostgresMemoryStore"):
        _add(store, "fine", "nul \x00 inside")
    assert store.search_memories() == []


def test_text_search_config(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    with pytest.raises(ConfigurationError, match="text_search_config"):
        PostgresMemoryStore(postgres_dsn, text_search_config="english'); DROP TABLE x; --")
    with pytest.raises(StoreError, match="PostgresMemoryStore"):
        _add(_store(stores, postgres_dsn, text_search_config="klingon"), "tea")


def test_dsn_serialization(
    monkeypatch: pytest.MonkeyPatch, postgres_dsn: str, stores: list[PostgresMemoryStore]
) -> None:
    with pytest.raises(SerializationError, match="password"):
        PostgresMemoryStore("postgresql://app:s3cret@db/app").to_dict()
    monkeypatch.setenv("HANDRAIL_TEST_MEMORY_DSN", postgres_dsn)
    secret = _store(stores, Secret.from_env_var("HANDRAIL_TEST_MEMORY_DSN"), text_search_config="english")
    data = secret.to_dict()
    assert data["init_parameters"]["dsn"] == {
        "type": "env_var",
        "env_vars": ["HANDRAIL_TEST_MEMORY_DSN"],
        "strict": True,
    }
    rebuilt = PostgresMemoryStore.from_dict(data)
    stores.append(rebuilt)
    assert rebuilt.text_search_config == "english"
    _add(rebuilt, "tea via the secret")
    assert [m.text for m in secret.search_memories(query="secret")] == ["tea via the secret"]


def test_concurrent_writers(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    errors: list[BaseException] = []
    message = ChatMessage.from_user("shared message")

    def work(worker: int) -> None:
        store = PostgresMemoryStore(postgres_dsn)
        try:
            for i in range(20):
                _add(store, f"worker {worker} note {i}")
                store.add_memories(messages=[message], user_id="ada")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            store.close()

    message.meta["message_id"] = "fixed-id"
    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = _store(stores, postgres_dsn)
    assert len(store.search_memories(query="note", user_id="ada", top_k=1000)) == 80
    assert len(store.search_memories(query="shared", user_id="ada", top_k=1000)) == 1


def test_shares_the_database_with_the_chat_store(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    from handrail.stores.chat_postgres import PostgresChatMessageStore

    memories = _store(stores, postgres_dsn)
    chats = PostgresChatMessageStore(postgres_dsn)
    try:
        messages = [ChatMessage.from_user("I drink green tea"), ChatMessage.from_assistant("Noted: green tea")]
        assert chats.write_messages("chat-1", messages) == 2
        assert len(memories.add_memories(messages=messages, user_id="ada")) == 2
        assert memories.delete_all_memories() == 2
        assert chats.count_messages("chat-1") == 2
    finally:
        chats.close()


def test_search_can_use_the_full_text_index(postgres_dsn: str, stores: list[PostgresMemoryStore]) -> None:
    import psycopg

    from handrail.stores.memory_postgres import _ranked_search

    _add(_store(stores, postgres_dsn), "Ada's cat is called Turing")
    sql, params = _ranked_search("simple", ["cat", "turing"], [], [])
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(str(row[0]) for row in conn.execute(f"EXPLAIN {sql}", (*params, 5)).fetchall())
    assert "handrail_memories_tsv" in plan
