"""A client and an in-process worker on the dev server, and small agents whose tool effects are counted."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from handrail import temporal as ht
from handrail.components.agents import Agent
from handrail.dataclasses.chat_message import ChatMessage, ChatRole
from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, SimpleConsoleUI
from handrail.testing import FunctionChatGenerator
from handrail.testing.builders import call, reply
from handrail.tools import Tool, create_tool_from_function


@dataclass
class Effects:
    """What the tools did, in order (one process)."""

    done: list[tuple[str, Any]] = field(default_factory=list)

    def transfer_tool(self) -> Tool:
        def transfer(amount: int, to: str = "bob") -> str:
            """Transfer money.

            Args:
                amount: How much.
                to: To whom.
            """
            self.done.append(("transfer", amount))
            return f"sent {amount} to {to}"

        return create_tool_from_function(transfer)


def asking(policy: Any = None, **settings: Any) -> BlockingConfirmationStrategy:
    """A strategy whose policy asks (the workflow asks through Updates; the UI is never used there)."""
    strategy = BlockingConfirmationStrategy(
        confirmation_policy=policy or AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI()
    )
    for name, value in settings.items():
        setattr(strategy, name, value)
    return strategy


def by_turn(script: list[ChatMessage]) -> FunctionChatGenerator:
    """A fake model whose reply depends only on the conversation (its turn: the assistant messages so far).

    Unlike a script that advances per call, every worker process answers a conversation the same way, so a run
    that moves to another worker (a restart, a kill) reads the same model.
    """

    def reply_for(messages: list[ChatMessage], tools: Any) -> ChatMessage:
        turn = sum(1 for m in messages if m.role is ChatRole.ASSISTANT)
        return script[min(turn, len(script) - 1)]

    return FunctionChatGenerator(reply_for)


def transfer_agent(
    effects: Effects, replies: list[ChatMessage] | None = None, strategy: Any = None, **agent_kwargs: Any
) -> Callable[[], Agent]:
    """A factory of an agent that asks before every transfer: the model transfers 5, then answers "done"."""

    def make() -> Agent:
        script = replies or [reply(call("transfer", {"amount": 5}, id="c1")), reply("done")]
        return Agent(
            chat_generator=by_turn(list(script)),
            tools=[effects.transfer_tool()],
            confirmation_strategies={"transfer": strategy or asking()},
            **agent_kwargs,
        )

    return make


@dataclass
class Harness:
    client: Client
    task_queue: str
    store: Any

    async def start(self, agent: str = "demo", question: str = "send 5", **kwargs: Any) -> str:
        return await ht.start_run(self.client, agent, question, task_queue=self.task_queue, **kwargs)

    async def waiting(self, run_id: str, count: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        """The calls waiting for a decision, once ``count`` of them wait."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            status = await ht.describe(self.client, run_id)
            waiting: list[dict[str, Any]] = status.get("waiting") or []
            if len(waiting) >= count:
                return waiting
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no {count} calls waited in {timeout} s: {status}")
            await asyncio.sleep(0.05)

    async def decide(self, run_id: str, call_id: str, decision: str = "approve", **kwargs: Any) -> dict[str, Any]:
        kwargs.setdefault("decided_by", "alice")
        return await ht.decide(self.client, run_id, call_id, decision, **kwargs)

    async def result(self, run_id: str, timeout: float = 120.0) -> dict[str, Any]:
        """The run's result (``timeout`` only guards against a hang: no test asserts on time)."""
        return await asyncio.wait_for(ht.get_result(self.client, run_id), timeout)


@contextlib.asynccontextmanager
async def harness(
    address: str, ledger_url: str, task_queue: str, agents: Mapping[str, Any], **worker_options: Any
) -> AsyncIterator[Harness]:
    """A client and one worker serving ``agents`` on ``task_queue``."""
    store = ht.open_temporal_store(ledger_url)
    client = await ht.connect(address, store)
    try:
        async with ht.create_worker(client, task_queue, agents, store, **worker_options):
            yield Harness(client, task_queue, store)
    finally:
        store.close()
