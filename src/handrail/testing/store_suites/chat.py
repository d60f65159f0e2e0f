"""The conformance suite every :class:`~handrail.stores.types.ChatMessageStore` backend must pass."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ToolCall
from handrail.errors import ConfigurationError, ConfigurationTypeError, SerializationError
from handrail.stores.types import MESSAGE_ID_KEY, ChatMessageStore

__all__ = ["ChatMessageStoreSuite", "make_round"]


def make_round(label: str, *, tools: int = 1, meta: dict[str, Any] | None = None) -> list[ChatMessage]:
    """One round of a conversation: a user message, ``tools`` tool calls with their results, the final answer.

    Args:
        label: Text that makes the round's messages recognisable (``"<label>?"`` from the user, ``"<label>!"``
            as the answer).
        tools: How many tool calls (one assistant message with the calls, then one tool message per call);
            0 for a plain question and answer.
        meta: Merged into every message's ``meta`` (each message also gets ``meta["pos"]``, its index).

    Returns:
        ``2 + (tools and tools + 1)`` messages, without ids.
    """
    calls = [ToolCall("lookup", {"q": label, "n": i}, id=f"{label}-call-{i}") for i in range(tools)]
    messages = [ChatMessage.from_user(f"{label}?")]
    if calls:
        messages.append(ChatMessage.from_assistant(tool_calls=calls))
        messages.extend(ChatMessage.from_tool(f"{label} result {i}", call) for i, call in enumerate(calls))
    messages.append(ChatMessage.from_assistant(f"{label}!"))
    for pos, message in enumerate(messages):
        message.meta.update(meta or {})
        message.meta["pos"] = pos
    return messages


def _every_kind() -> list[ChatMessage]:
    call = ToolCall("weather", {"city": "Zürich", "days": [1, 2]}, id="call_1", extra={"provider": {"x": 1}})
    raw = ToolCall("weather", '{"city": broken', id="call_2")
    return [
        ChatMessage.from_user("Wie wird das Wetter in Zürich? 🌦 東京も", name="anna", meta={"lang": "de"}),
        ChatMessage.from_assistant("Let me look.", tool_calls=[call, raw], meta={"usage": {"total_tokens": 12}}),
        ChatMessage.from_tool("12 °C, Nebel", call),
        ChatMessage.from_tool("arguments are not JSON", raw, error=True, meta={"nested": {"a": [None, True, 1.5]}}),
        ChatMessage.from_assistant(""),
        ChatMessage.from_assistant('Es wird neblig: 12 °C.\n"quoted" \\ back\tslash \u0000 nul'),
    ]


class ChatMessageStoreSuite:
    """Tests every chat message store must pass. Subclass it as ``Test...`` and implement :meth:`make_store`.

    The store each test gets must start empty. Stores with a ``close()`` method are closed after the test.
    """

    def make_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        """Return a new, empty store of the backend under test.

        Args:
            store_system_messages: Passed to the store's constructor.
        """
        raise NotImplementedError("Subclasses of ChatMessageStoreSuite implement make_store().")

    @pytest.fixture(autouse=True)
    def _close_chat_stores(self) -> Iterator[None]:
        self._chat_stores: list[object] = []
        yield
        for store in self._chat_stores:
            close: Callable[[], None] | None = getattr(store, "close", None)
            if close is not None:
                close()

    def new_store(self, *, store_system_messages: bool = False) -> ChatMessageStore:
        """:meth:`make_store`, remembering the store so it is closed after the test."""
        store = self.make_store(store_system_messages=store_system_messages)
        self.keep(store)
        return store

    def keep(self, store: object) -> None:
        """Close ``store`` (when it has ``close()``) after the test."""
        self._chat_stores.append(store)

    @pytest.fixture
    def store(self) -> ChatMessageStore:
        """A new, empty store with default options."""
        return self.new_store()

    # -- writing and reading -------------------------------------------------------------------------------

    def test_is_a_chat_message_store(self, store: ChatMessageStore) -> None:
        """The store satisfies the ChatMessageStore protocol."""
        assert isinstance(store, ChatMessageStore)

    def test_write_returns_count_and_retrieve_keeps_order(self, store: ChatMessageStore) -> None:
        """write_messages returns how many it wrote; retrieve_messages gives them in write order."""
        first, second = make_round("a", tools=2), make_round("b", tools=0)
        assert store.write_messages("h", first) == 5
        assert store.write_messages("h", second) == 2
        assert [m.text for m in store.retrieve_messages("h") if m.is_from(ChatRole.USER)] == ["a?", "b?"]
        assert store.retrieve_messages("h") == first + second

    def test_every_message_kind_round_trips(self, store: ChatMessageStore) -> None:
        """User, assistant (text and tool calls), tool results, names, meta and non-ASCII text round-trip."""
        messages = _every_kind()
        assert store.write_messages("h", messages) == len(messages)
        back = store.retrieve_messages("h")
        assert back == messages
        assert [m.to_dict() for m in back] == [m.to_dict() for m in messages]
        assert back[1].tool_calls[1].arguments == '{"city": broken'
        assert back[3].tool_call_result is not None and back[3].tool_call_result.error is True

    def test_retrieved_messages_are_copies(self, store: ChatMessageStore) -> None:
        """Changing a retrieved message does not change the stored one."""
        store.write_messages("h", [ChatMessage.from_user("hi", meta={"tags": ["x"]})])
        store.retrieve_messages("h")[0].meta["tags"].append("changed")
        assert store.retrieve_messages("h")[0].meta["tags"] == ["x"]

    def test_system_messages_are_skipped_by_default(self, store: ChatMessageStore) -> None:
        """System messages are not stored (nor given ids) by default."""
        system = ChatMessage.from_system("You are terse.")
        assert store.write_messages("h", [system, *make_round("a", tools=0)]) == 2
        assert [m.role for m in store.retrieve_messages("h")] == [ChatRole.USER, ChatRole.ASSISTANT]
        assert MESSAGE_ID_KEY not in system.meta
        assert store.write_messages("h", [system]) == 0

    def test_system_messages_are_kept_when_enabled(self) -> None:
        """With store_system_messages=True they are stored like the others."""
        store = self.new_store(store_system_messages=True)
        messages = [ChatMessage.from_system("Réponds en français.", meta={"v": 2}), *make_round("a")]
        assert store.write_messages("h", messages) == 5
        assert store.retrieve_messages("h") == messages

    def test_empty_batch_writes_nothing(self, store: ChatMessageStore) -> None:
        """An empty batch writes nothing and creates no history."""
        assert store.write_messages("h", []) == 0
        assert store.count_messages("h") == 0
        assert store.retrieve_messages("h") == []

    # -- ids -----------------------------------------------------------------------------------------------

    def test_ids_are_assigned_in_place(self, store: ChatMessageStore) -> None:
        """Messages without an id get a unique one in meta['message_id'], kept in the store."""
        messages = make_round("a")
        store.write_messages("h", messages)
        ids = [m.meta[MESSAGE_ID_KEY] for m in messages]
        assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == len(ids)
        assert [m.meta[MESSAGE_ID_KEY] for m in store.retrieve_messages("h")] == ids

    def test_given_ids_are_kept(self, store: ChatMessageStore) -> None:
        """An id the caller set is kept."""
        message = ChatMessage.from_user("hi", meta={MESSAGE_ID_KEY: "mine-1"})
        store.write_messages("h", [message])
        assert message.meta[MESSAGE_ID_KEY] == "mine-1"
        assert store.retrieve_messages("h")[0].meta[MESSAGE_ID_KEY] == "mine-1"

    def test_writing_the_same_messages_again_is_a_no_op(self, store: ChatMessageStore) -> None:
        """Writing the same message objects twice stores them once."""
        messages = make_round("a")
        assert store.write_messages("h", messages) == 4
        assert store.write_messages("h", messages) == 0
        assert store.count_messages("h") == 4

    def test_stored_ids_are_skipped_and_new_ones_appended(self, store: ChatMessageStore) -> None:
        """In a mixed batch, stored ids are skipped and the new messages appended in order."""
        old = make_round("a", tools=0)
        store.write_messages("h", old)
        new = make_round("b", tools=0)
        assert store.write_messages("h", [old[0], new[0], old[1], new[1]]) == 2
        assert store.retrieve_messages("h") == old + new

    def test_duplicates_within_one_batch_are_written_once(self, store: ChatMessageStore) -> None:
        """An id repeated inside one batch is written once (the first occurrence)."""
        message = ChatMessage.from_user("hi")
        twin = ChatMessage.from_user("hi again", meta={MESSAGE_ID_KEY: "dup"})
        same_id = ChatMessage.from_user("x", meta={MESSAGE_ID_KEY: "dup"})
        assert store.write_messages("h", [message, twin, message, same_id]) == 2
        assert [m.text for m in store.retrieve_messages("h")] == ["hi", "hi again"]

    def test_ids_are_per_history(self, store: ChatMessageStore) -> None:
        """The same ids may be stored in two histories."""
        messages = make_round("a", tools=0)
        assert store.write_messages("h1", messages) == 2
        assert store.write_messages("h2", messages) == 2
        assert store.retrieve_messages("h1") == store.retrieve_messages("h2") == messages

    def test_bad_id_is_refused_before_writing(self, store: ChatMessageStore) -> None:
        """A non-string message_id is refused and nothing is written."""
        messages = [ChatMessage.from_user("ok"), ChatMessage.from_user("bad", meta={MESSAGE_ID_KEY: 7})]
        with pytest.raises(ConfigurationTypeError, match="message_id"):
            store.write_messages("h", messages)
        assert store.count_messages("h") == 0

    def test_bad_arguments_are_refused(self, store: ChatMessageStore) -> None:
        """Bad history ids and non-message batches are refused before anything is written."""
        with pytest.raises(ConfigurationError):
            store.write_messages("", [ChatMessage.from_user("x")])
        with pytest.raises(ConfigurationTypeError):
            store.write_messages(7, [ChatMessage.from_user("x")])  # type: ignore[arg-type]
        with pytest.raises(ConfigurationTypeError):
            store.write_messages("h", ["not a message"])  # type: ignore[list-item]
        with pytest.raises(ConfigurationTypeError):
            store.write_messages("h", ChatMessage.from_user("x"))  # type: ignore[arg-type]
        assert store.count_messages("h") == 0

    def test_no_partial_write_when_a_message_cannot_be_serialized(self, store: ChatMessageStore) -> None:
        """A batch with one unserializable message writes nothing; the error names the message."""
        kept = make_round("kept", tools=0)
        store.write_messages("h", kept)
        batch = [*make_round("a"), ChatMessage.from_user("bad", meta={"when": object()})]
        with pytest.raises(SerializationError, match=r"messages\[4\]"):
            store.write_messages("h", batch)
        assert store.retrieve_messages("h") == kept
        with pytest.raises(SerializationError):
            store.write_messages("other", [ChatMessage.from_user("nan", meta={"x": float("nan")})])
        assert store.count_messages("other") == 0

    # -- rounds --------------------------------------------------------------------------------------------

    def test_last_k_counts_rounds_with_tool_traffic(self, store: ChatMessageStore) -> None:
        """last_k counts rounds (user message to final answer, tool traffic included)."""
        a, b, c = make_round("a", tools=2), make_round("b", tools=0), make_round("c", tools=3)
        store.write_messages("h", a + b + c)
        assert store.retrieve_messages("h", last_k=1) == c
        assert store.retrieve_messages("h", last_k=2) == b + c
        assert store.retrieve_messages("h", last_k=3) == a + b + c
        assert store.retrieve_messages("h", last_k=50) == a + b + c
        assert store.retrieve_messages("h", last_k=None) == a + b + c
        assert store.retrieve_messages("h", last_k=0) == []

    def test_last_k_keeps_an_unfinished_round(self, store: ChatMessageStore) -> None:
        """A round without its answer yet is still the last round."""
        a = make_round("a")
        pending = make_round("b", tools=2)[:3]  # the user's question, the calls, one result: no answer yet
        store.write_messages("h", a + pending)
        assert store.retrieve_messages("h", last_k=1) == pending
        assert store.retrieve_messages("h", last_k=2) == a + pending

    def test_messages_before_the_first_user_message_belong_to_the_first_round(self) -> None:
        """A leading system message belongs to the first round."""
        store = self.new_store(store_system_messages=True)
        system = ChatMessage.from_system("Be brief.")
        a, b = make_round("a", tools=0), make_round("b", tools=0)
        store.write_messages("h", [system, *a, *b])
        assert store.retrieve_messages("h", last_k=1) == b
        assert store.retrieve_messages("h", last_k=2) == [system, *a, *b]

    def test_last_k_of_a_history_without_user_messages(self, store: ChatMessageStore) -> None:
        """A history without user messages is one round."""
        answers = [ChatMessage.from_assistant("one"), ChatMessage.from_assistant("two")]
        store.write_messages("h", answers)
        assert store.retrieve_messages("h", last_k=1) == answers

    @pytest.mark.parametrize("last_k", [-1, -100, 1.5, "2", True, [1]])
    def test_invalid_last_k_is_refused(self, store: ChatMessageStore, last_k: Any) -> None:
        """Negative and non-int last_k values raise ConfigurationError."""
        store.write_messages("h", make_round("a"))
        with pytest.raises(ConfigurationError, match="last_k"):
            store.retrieve_messages("h", last_k=last_k)

    def test_unknown_history_is_empty(self, store: ChatMessageStore) -> None:
        """An unknown history reads as empty."""
        assert store.retrieve_messages("nobody") == []
        assert store.retrieve_messages("nobody", last_k=3) == []
        assert store.count_messages("nobody") == 0

    # -- counts, deletes, isolation ------------------------------------------------------------------------

    def test_count_messages(self, store: ChatMessageStore) -> None:
        """count_messages counts the stored messages of a history."""
        store.write_messages("h", make_round("a", tools=2))
        store.write_messages("h", make_round("b", tools=0))
        assert store.count_messages("h") == 7

    def test_histories_are_isolated(self, store: ChatMessageStore) -> None:
        """Histories do not see each other's messages (ids that share a prefix included)."""
        one, two = make_round("one"), make_round("two", tools=0)
        store.write_messages("h1", one)
        store.write_messages("h2", two)
        store.write_messages("h1-suffix", make_round("three"))
        assert store.retrieve_messages("h1") == one
        assert store.retrieve_messages("h2", last_k=5) == two
        assert (store.count_messages("h1"), store.count_messages("h2")) == (4, 2)

    def test_delete_messages_deletes_one_history(self, store: ChatMessageStore) -> None:
        """delete_messages removes one history only; an unknown id is no error."""
        store.write_messages("h1", make_round("a"))
        kept = make_round("b")
        store.write_messages("h2", kept)
        store.delete_messages("h1")
        store.delete_messages("never-written")
        assert store.count_messages("h1") == 0
        assert store.retrieve_messages("h2") == kept
        again = make_round("c")
        assert store.write_messages("h1", again) == 4
        assert store.retrieve_messages("h1") == again

    def test_delete_all_messages(self, store: ChatMessageStore) -> None:
        """delete_all_messages removes every history; the store stays usable."""
        store.write_messages("h1", make_round("a"))
        store.write_messages("h2", make_round("b"))
        store.delete_all_messages()
        assert store.count_messages("h1") == store.count_messages("h2") == 0
        assert store.write_messages("h1", make_round("c")) == 4

    # -- concurrency ---------------------------------------------------------------------------------------

    def _run_threads(self, count: int, target: Callable[[int], None]) -> None:
        barrier = threading.Barrier(count)
        errors: list[BaseException] = []

        def run(n: int) -> None:
            try:
                barrier.wait()
                target(n)
            except BaseException as exc:  # reported below, in the test's thread
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, f"{len(errors)} writer threads failed; the first: {errors[0]!r}"

    def test_concurrent_writers_lose_and_duplicate_nothing(self, store: ChatMessageStore) -> None:
        """Threads writing to one history lose and duplicate nothing; each batch stays contiguous."""
        writers, rounds = 6, 8

        def write(n: int) -> None:
            for j in range(rounds):
                assert store.write_messages("shared", make_round(f"w{n}-{j}", meta={"w": n, "j": j})) == 4

        self._run_threads(writers, write)
        stored = store.retrieve_messages("shared")
        assert store.count_messages("shared") == len(stored) == writers * rounds * 4
        assert len({m.meta[MESSAGE_ID_KEY] for m in stored}) == len(stored)
        batches = [stored[i : i + 4] for i in range(0, len(stored), 4)]
        for batch in batches:  # each batch is stored contiguously and in order
            assert [m.meta["pos"] for m in batch] == [0, 1, 2, 3]
            assert len({(m.meta["w"], m.meta["j"]) for m in batch}) == 1
        for n in range(writers):  # each writer's batches keep their order
            assert [b[0].meta["j"] for b in batches if b[0].meta["w"] == n] == list(range(rounds))
        assert store.retrieve_messages("shared", last_k=1) == batches[-1]

    def test_concurrent_writes_of_the_same_messages_store_them_once(self, store: ChatMessageStore) -> None:
        """Threads writing the same messages at once store them exactly once."""
        messages = make_round("same", tools=2)
        for i, message in enumerate(messages):
            message.meta[MESSAGE_ID_KEY] = f"id-{i}"
        written: list[int] = []

        def write(n: int) -> None:
            written.append(store.write_messages("h", [ChatMessage.from_dict(m.to_dict()) for m in messages]))

        self._run_threads(5, write)
        assert sum(written) == len(messages)
        assert store.retrieve_messages("h") == messages

    # -- serialization -------------------------------------------------------------------------------------

    def test_to_dict_from_dict(self, store: ChatMessageStore) -> None:
        """to_dict gives a JSON-compatible envelope that from_dict rebuilds into a working store."""
        for i, original in enumerate((store, self.new_store(store_system_messages=True))):
            data = original.to_dict()
            assert set(data) == {"type", "init_parameters"}
            assert json.loads(json.dumps(data)) == data
            rebuilt = type(original).from_dict(data)  # type: ignore[attr-defined]
            self.keep(rebuilt)
            assert type(rebuilt) is type(original)
            assert rebuilt.to_dict() == data
            system = ChatMessage.from_system("sys")
            messages = [system, *make_round("r", tools=0)]
            rebuilt.write_messages(f"rebuilt-{i}", messages)
            keeps_system = data["init_parameters"].get("store_system_messages")
            assert rebuilt.retrieve_messages(f"rebuilt-{i}") == (messages if keeps_system else messages[1:])
