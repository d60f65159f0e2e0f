from __future__ import annotations

from handrail.stores.chat_memory import InMemoryChatMessageStore
from handrail.stores.types import ChatMessageStore
from handrail.testing.store_suites import ChatMessageStoreSuite


class TestInMemoryChatMessageStore(ChatMessageStoreSuite):
    def make_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        return InMemoryChatMessageStore(store_system_messages=store_system_messages)


def test_from_dict_builds_an_empty_store() -> None:
    store = InMemoryChatMessageStore()
    store.write_messages("h", [])
    assert InMemoryChatMessageStore.from_dict(store.to_dict()).count_messages("h") == 0
    assert store.to_dict() == {
        "type": "handrail.stores.chat_memory.InMemoryChatMessageStore",
        "init_parameters": {"store_system_messages": False},
    }
