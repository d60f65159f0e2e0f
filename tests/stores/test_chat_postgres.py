from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from handrail.core.secret import Secret
from handrail.errors import ConfigurationError, SerializationError, StoreError
from handrail.stores.chat_postgres import PostgresChatMessageStore
from handrail.stores.types import MESSAGE_ID_KEY, ChatMessageStore
from handrail.testing.store_suites import ChatMessageStoreSuite
from handrail.testing.store_suites.chat import make_round

pytestmark = pytest.mark.postgres


class TestPostgresChatMessageStore(ChatMessageStoreSuite):
    @pytest.fixture(autouse=True)
    def _database(self, postgres_dsn: str) -> None:
        self.dsn = postgres_dsn

    def make_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        return PostgresChatMessageStore(self.dsn, store_system_messages=store_system_messages, max_size=4)


@pytest.fixture
def store(postgres_dsn: str) -> Iterator[PostgresChatMessageStore]:
    store = PostgresChatMessageStore(postgres_dsn)
    yield store
    store.close()


def _sql(dsn: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]  # constant test SQL


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_server_names_the_store_and_hides_the_password() -> None:
    dsn = f"postgresql://handrail:s3cret-pw@127.0.0.1:{_closed_port()}/nowhere"
    store = PostgresChatMessageStore(dsn, timeout=1)
    with pytest.raises(StoreError) as caught:
        store.count_messages("h")
    message = str(caught.value)
    assert "PostgresChatMessageStore" in message
    assert "postgresql://handrail:***@127.0.0.1" in message
    assert "s3cret-pw" not in message
    store.close()


@pytest.mark.parametrize("data", ["{not json", "[1, 2]", '{"role": "wizard", "content": []}'])
def test_a_corrupt_row_names_the_store_history_and_message(
    postgres_dsn: str, store: PostgresChatMessageStore, data: str
) -> None:
    messages = make_round("a", tools=0)
    store.write_messages("chat-7", messages)
    bad_id = messages[1].meta[MESSAGE_ID_KEY]
    _sql(postgres_dsn, f"UPDATE handrail_chat_messages SET data = '{data}' WHERE message_id = '{bad_id}'")
    with pytest.raises(StoreError) as caught:
        store.retrieve_messages("chat-7")
    assert "PostgresChatMessageStore" in str(caught.value)
    assert "'chat-7'" in str(caught.value) and repr(bad_id) in str(caught.value)


def test_no_partial_write_when_the_database_refuses_a_row(postgres_dsn: str, store: PostgresChatMessageStore) -> None:
    kept = make_round("kept")
    store.write_messages("h", kept)
    _sql(
        postgres_dsn,
        "CREATE FUNCTION handrail_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.message_id = 'boom' THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON handrail_chat_messages "
        "FOR EACH ROW EXECUTE FUNCTION handrail_test_refuse()",
    )
    try:
        batch = make_round("b")
        batch[2].meta[MESSAGE_ID_KEY] = "boom"
        with pytest.raises(StoreError, match=r"PostgresChatMessageStore.*refused by a test trigger"):
            store.write_messages("h", batch)
        assert store.retrieve_messages("h") == kept
    finally:
        _sql(postgres_dsn, "DROP TRIGGER refuse ON handrail_chat_messages", "DROP FUNCTION handrail_test_refuse()")
    assert store.write_messages("h", batch) == 4
    assert store.retrieve_messages("h") == kept + batch


def test_a_newer_schema_version_is_refused(postgres_dsn: str, store: PostgresChatMessageStore) -> None:
    store.write_messages("h", make_round("a"))
    _sql(postgres_dsn, "UPDATE handrail_schema SET version = 99 WHERE store = 'PostgresChatMessageStore'")
    newer = PostgresChatMessageStore(postgres_dsn)
    try:
        with pytest.raises(StoreError, match=r"PostgresChatMessageStore.*schema version 99"):
            newer.count_messages("h")
    finally:
        newer.close()
        _sql(postgres_dsn, "UPDATE handrail_schema SET version = 1 WHERE store = 'PostgresChatMessageStore'")


def test_a_second_store_sees_the_messages(postgres_dsn: str, store: PostgresChatMessageStore) -> None:
    messages = make_round("a")
    store.write_messages("h", messages)
    other = PostgresChatMessageStore.from_dict(store.to_dict())
    try:
        assert other.retrieve_messages("h", last_k=1) == messages
        assert other.write_messages("h", messages) == 0
    finally:
        other.close()


def test_a_secret_dsn_serializes_as_its_variable(postgres_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HANDRAIL_TEST_CHAT_DSN", postgres_dsn)
    store = PostgresChatMessageStore(Secret.from_env_var("HANDRAIL_TEST_CHAT_DSN"), timeout=5)
    data = store.to_dict()
    assert data["init_parameters"]["dsn"] == {"type": "env_var", "env_vars": ["HANDRAIL_TEST_CHAT_DSN"], "strict": True}
    rebuilt = PostgresChatMessageStore.from_dict(data)
    try:
        assert rebuilt.to_dict() == data
        assert rebuilt.write_messages("h", make_round("a")) == 4
        assert store.count_messages("h") == 4
    finally:
        rebuilt.close()
        store.close()


def test_a_password_in_a_plain_dsn_is_never_serialized() -> None:
    store = PostgresChatMessageStore("postgresql://app:hunter2@db.example:5432/app")
    with pytest.raises(SerializationError, match=r"app:\*\*\*@db.example") as caught:
        store.to_dict()
    assert "hunter2" not in str(caught.value)
    keyword = PostgresChatMessageStore("host=db.example user=app password=hunter2 dbname=app")
    with pytest.raises(SerializationError) as caught:
        keyword.to_dict()
    assert "hunter2" not in str(caught.value)


def test_bad_dsn_arguments_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANDRAIL_TEST_UNSET_DSN", raising=False)
    with pytest.raises(ConfigurationError):
        PostgresChatMessageStore(Secret.from_env_var("HANDRAIL_TEST_UNSET_DSN"))
    with pytest.raises(ConfigurationError):
        PostgresChatMessageStore("")
