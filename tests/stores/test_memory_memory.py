from __future__ import annotations

import threading

from handrail.dataclasses.chat_message import ChatMessage
from handrail.stores.memory_memory import InMemoryMemoryStore
from handrail.testing.store_suites.memory import MemoryStoreSuite


class TestInMemoryMemoryStore(MemoryStoreSuite):
    def make_store(self) -> InMemoryMemoryStore:
        return InMemoryMemoryStore()


def test_from_dict_gives_an_empty_store() -> None:
    store = InMemoryMemoryStore()
    store.add_memories(messages=[ChatMessage.from_user("tea")], user_id="ada")
    assert InMemoryMemoryStore.from_dict(store.to_dict()).search_memories() == []


def test_accents_and_case_are_folded() -> None:
    store = InMemoryMemoryStore()
    store.add_memories(messages=[ChatMessage.from_user("Grüße aus MÜNCHEN")], user_id="ada")
    assert [m.text for m in store.search_memories(query="munchen grusse")] == ["Grüße aus MÜNCHEN"]


def test_concurrent_adds_from_threads() -> None:
    store = InMemoryMemoryStore()

    def add(worker: int) -> None:
        for i in range(50):
            store.add_memories(messages=[ChatMessage.from_user(f"worker {worker} note {i}")], user_id="ada")

    threads = [threading.Thread(target=add, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.search_memories(user_id="ada", top_k=1000)) == 200
