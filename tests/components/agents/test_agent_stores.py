"""The Agent with a chat message store and a memory store: load before the loop, write after it completes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole
from handrail.dataclasses.breakpoints import HITLBreakpointException
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.snapshot import load_snapshot
from handrail.errors import ConfigurationError
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.stores import InMemoryChatMessageStore, InMemoryMemoryStore
from handrail.testing import ScriptedChatGenerator
from handrail.tools import create_tool_from_function
from tests.cases._helpers import asst, user


def pay(amount: int) -> str:
    """Pay.

    Args:
        amount: How much.
    """
    return f"paid {amount}"


def _agent(replies: list[ChatMessage], **kwargs: Any) -> Agent:
    return Agent(chat_generator=ScriptedChatGenerator(replies), system_prompt="Be brief.", **kwargs)


def _texts(messages: list[ChatMessage]) -> list[tuple[str, str | None]]:
    return [(m.role.value, m.text) for m in messages]


def test_history_is_loaded_before_the_input_and_the_new_exchange_written_after() -> None:
    store = InMemoryChatMessageStore()
    kwargs = {"chat_history_id": "c"}
    _agent([asst("Hi Ann.")], chat_message_store=store).run([user("I am Ann.")], chat_message_store_kwargs=kwargs)
    assert _texts(store.retrieve_messages("c")) == [("user", "I am Ann."), ("assistant", "Hi Ann.")]
    agent = _agent([asst("You are Ann.")], chat_message_store=store)
    result = agent.run([user("Who am I?")], chat_message_store_kwargs=kwargs)
    seen = agent.chat_generator.calls[0]["messages"]
    assert _texts(seen) == [("system", "Be brief."), ("user", "I am Ann."), ("assistant", "Hi Ann."),
                            ("user", "Who am I?")]  # fmt: skip
    assert _texts(result["messages"]) == _texts([*seen, asst("You are Ann.")])
    assert store.count_messages("c") == 4  # the loaded history is not written again


def test_last_k_loads_the_last_rounds_only() -> None:
    store = InMemoryChatMessageStore()
    for question, answer in (("one", "1"), ("two", "2"), ("three", "3")):
        _agent([asst(answer)], chat_message_store=store).run(
            [user(question)], chat_message_store_kwargs={"chat_history_id": "c"}
        )
    agent = _agent([asst("ok")], chat_message_store=store)
    agent.run([user("four")], chat_message_store_kwargs={"chat_history_id": "c", "last_k": 1})
    assert _texts(agent.chat_generator.calls[0]["messages"])[1:] == [("user", "three"), ("assistant", "3"),
                                                                     ("user", "four")]  # fmt: skip


def test_a_failed_run_writes_nothing() -> None:
    store = InMemoryChatMessageStore()
    agent = _agent([RuntimeError("model down")], chat_message_store=store)
    with pytest.raises(RuntimeError):
        agent.run([user("hi")], chat_message_store_kwargs={"chat_history_id": "c"})
    assert store.count_messages("c") == 0


def test_a_paused_run_writes_nothing_and_the_completed_resume_writes_the_exchange_once(tmp_path: Path) -> None:
    store = InMemoryChatMessageStore()
    memory = InMemoryMemoryStore()
    tools = [create_tool_from_function(pay)]
    strategies = {"pay": BreakpointConfirmationStrategy(str(tmp_path))}
    kwargs = {"chat_history_id": "c"}
    first = Agent(
        chat_generator=ScriptedChatGenerator([asst(calls=[("p1", "pay", {"amount": 3})])]), tools=tools,
        confirmation_strategies=strategies, chat_message_store=store, memory_store=memory,
    )  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        first.run([user("pay 3")], chat_message_store_kwargs=kwargs, memory_store_kwargs={"user_id": "u"})
    assert store.count_messages("c") == 0
    assert memory.search_memories(user_id="u") == []
    snap = load_snapshot(info.value.snapshot_file_path)
    assert snap.messages[-2].meta.get("message_id")  # the input got its id when the agent received it
    decided = dataclasses.replace(snap, tool_execution_decisions=[ToolExecutionDecision("pay", True, "p1")])
    second = Agent(
        chat_generator=ScriptedChatGenerator([asst("Paid.")]), tools=tools, confirmation_strategies=strategies,
        chat_message_store=store, memory_store=memory,
    )  # fmt: skip
    result = second.run([], snapshot=decided)
    assert _texts(store.retrieve_messages("c")) == [("user", "pay 3"), ("assistant", None), ("tool", None),
                                                    ("assistant", "Paid.")]  # fmt: skip
    assert [m.role for m in result["messages"]].count(ChatRole.SYSTEM) == 0  # no prompt, no memory found
    assert {m.text for m in memory.search_memories(user_id="u", top_k=10)} >= {"pay 3", "Paid."}


def test_store_kwargs_given_again_on_resume_must_match(tmp_path: Path) -> None:
    store = InMemoryChatMessageStore()
    tools = [create_tool_from_function(pay)]
    strategies = {"pay": BreakpointConfirmationStrategy(str(tmp_path))}
    agent = Agent(chat_generator=ScriptedChatGenerator([asst(calls=[("p1", "pay", {"amount": 3})])]), tools=tools,
                  confirmation_strategies=strategies, chat_message_store=store)  # fmt: skip
    with pytest.raises(HITLBreakpointException) as info:
        agent.run([user("pay")], chat_message_store_kwargs={"chat_history_id": "c"})
    with pytest.raises(ConfigurationError, match="chat_message_store_kwargs"):
        agent.run([], snapshot=info.value.snapshot, chat_message_store_kwargs={"chat_history_id": "other"})


def test_memories_go_into_the_one_system_message() -> None:
    memory = InMemoryMemoryStore()
    memory.add_memories(messages=[user("Ann likes green tea."), user("Ann's cat is called Miso.")], user_id="ann")
    memory.add_memories(messages=[user("Bob likes coffee.")], user_id="bob")
    agent = _agent([asst("Green tea.")], memory_store=memory)
    agent.run([user("What tea does Ann like?")], memory_store_kwargs={"user_id": "ann"})
    system = agent.chat_generator.calls[0]["messages"][0]
    assert system.role is ChatRole.SYSTEM and system.text.startswith("Be brief.")
    assert "<long_term_memory>" in system.text and "Ann likes green tea." in system.text
    assert "Bob" not in system.text
    assert system.meta.get("long_term_memory") is True
    assert [m.role for m in agent.chat_generator.calls[0]["messages"]].count(ChatRole.SYSTEM) == 1


def test_an_explicit_query_replaces_the_user_text_for_retrieval() -> None:
    memory = InMemoryMemoryStore()
    memory.add_memories(messages=[user("The cat is called Miso."), user("Tea: green.")], user_id="ann")
    agent = _agent([asst("ok")], memory_store=memory)
    agent.run([user("Tea?")], memory_store_kwargs={"user_id": "ann", "search_criteria": {"query": "cat", "top_k": 1}})
    system_text = agent.chat_generator.calls[0]["messages"][0].text
    assert "Miso" in system_text and "green" not in system_text


def test_without_ids_the_stores_are_not_touched() -> None:
    store, memory = InMemoryChatMessageStore(), InMemoryMemoryStore()
    agent = _agent([asst("ok")], chat_message_store=store, memory_store=memory)
    agent.run([user("hi")], chat_message_store_kwargs={}, memory_store_kwargs={"search_criteria": {"top_k": 2}})
    assert store.count_messages("c") == 0 and memory.search_memories(user_id="x") == []
    assert agent.chat_generator.calls[0]["messages"][0].text == "Be brief."


def test_agent_with_stores_round_trips_through_to_dict() -> None:
    agent = _agent([asst("ok")], chat_message_store=InMemoryChatMessageStore(), memory_store=InMemoryMemoryStore())
    again = Agent.from_dict(agent.to_dict())
    assert type(again.chat_message_store) is InMemoryChatMessageStore
    assert type(again.memory_store) is InMemoryMemoryStore


async def test_run_async_loads_history_and_memories_off_the_event_loop_thread() -> None:
    import threading

    loop_thread = threading.current_thread()
    seen: list[tuple[str, threading.Thread]] = []

    class Chat(InMemoryChatMessageStore):
        def retrieve_messages(self, chat_history_id: str, last_k: int | None = None) -> list[ChatMessage]:
            seen.append(("history", threading.current_thread()))
            return super().retrieve_messages(chat_history_id, last_k)

    class Memory(InMemoryMemoryStore):
        def search_memories(self, **kwargs: Any) -> list[ChatMessage]:
            seen.append(("memories", threading.current_thread()))
            return super().search_memories(**kwargs)

    agent = _agent([asst("hi")], chat_message_store=Chat(), memory_store=Memory())
    out = await agent.run_async(
        [user("hello")], chat_message_store_kwargs={"chat_history_id": "h"}, memory_store_kwargs={"user_id": "u"}
    )
    assert out["last_message"].text == "hi"
    assert [what for what, _ in seen] == ["history", "memories"]
    assert all(thread is not loop_thread for _, thread in seen)
