"""The client's errors name what was wrong: an unknown run, an unreachable server, bad options or run ids."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import temporal as ht
from handrail.errors import ConfigurationError
from tests.temporal._harness import Effects, harness, transfer_agent
from tests.temporal.conftest import free_port


async def test_an_unknown_run_is_named(dev_server: Any, ledger_url: str, task_queue: str) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects())}) as h:
        for action in (ht.describe(h.client, "ghost-run"), ht.get_result(h.client, "ghost-run"),
                       ht.decide(h.client, "ghost-run", "c1", "approve", decided_by="alice")):  # fmt: skip
            with pytest.raises(ht.RunNotFoundError, match="No run 'ghost-run'"):
                await action


async def test_an_unreachable_server_is_said_so_within_the_timeout(ledger_url: str) -> None:
    store = ht.open_temporal_store(ledger_url)
    with pytest.raises(ht.TemporalUnavailableError, match=r"Cannot reach the Temporal server at 127\.0\.0\.1"):
        await ht.connect(f"127.0.0.1:{free_port()}", store, connect_timeout=2)
    store.close()


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:port", "http://127.0.0.1:7233", ""])
async def test_a_malformed_address_is_refused_before_connecting(ledger_url: str, address: str) -> None:
    store = ht.open_temporal_store(ledger_url)
    with pytest.raises(ConfigurationError, match="HOST:PORT"):
        await ht.connect(address, store)
    store.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_id": ""}, "run_id must be"),
        ({"run_id": "x" * 256}, "run_id must be"),
        ({"run_id": "a\nb"}, "run_id must be"),
        ({"options": ht.RunOptions(unknown_outcome="maybe")}, "unknown_outcome must be"),
        ({"options": ht.RunOptions(heartbeat_seconds=0)}, "heartbeat_seconds must be"),
        ({"options": ht.RunOptions(continue_after_events=10)}, "continue_after_events must be"),
        ({"options": ht.RunOptions(model_attempts=0)}, "model_attempts must be"),
    ],
)
async def test_bad_run_arguments_are_refused_before_anything_starts(
    dev_server: Any, ledger_url: str, task_queue: str, kwargs: dict[str, Any], message: str
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects())}) as h:
        with pytest.raises(ConfigurationError, match=message):
            await h.start(**kwargs)
        with pytest.raises(ConfigurationError, match="question is empty"):
            await h.start(question="  ")


async def test_a_decision_after_the_run_ended_says_so(dev_server: Any, ledger_url: str, task_queue: str) -> None:
    from handrail.testing.builders import reply

    async with harness(
        dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects(), [reply("hi")])}
    ) as h:
        run_id = await h.start()
        await h.result(run_id)
        with pytest.raises(ht.RunEndedError, match="has ended"):
            await h.decide(run_id, "c1")


async def test_bad_client_and_worker_arguments_name_what_is_wrong(dev_server: Any, ledger_url: str,
                                                                  task_queue: str) -> None:  # fmt: skip
    from handrail.components.agents import Agent

    with pytest.raises(ConfigurationError, match="needs the deployment's store"):
        await ht.connect(dev_server.address, None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="cannot reach PostgreSQL"):
        ht.open_temporal_store(f"postgresql://nobody@127.0.0.1:{free_port()}/db")

    def broken() -> Agent:
        raise ZeroDivisionError("division by zero")

    store = ht.open_temporal_store(ledger_url)
    client = await ht.connect(dev_server.address, store)
    with pytest.raises(ConfigurationError, match="The factory of agent 'broken' raised ZeroDivisionError"):
        ht.create_worker(client, task_queue, {"broken": broken}, store)
    with pytest.raises(ConfigurationError, match=r"The approvals store .* cannot be used"):
        ht.create_worker(client, task_queue, {"demo": transfer_agent(Effects())}, store,
                         approvals="sqlite:////proc/no-such-dir/approvals.db")  # fmt: skip
    store.close()
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects())}) as h:
        for question in (None, [], "\ud800"):
            with pytest.raises(ConfigurationError, match=r"question|messages"):
                await h.start(question=question)  # type: ignore[arg-type]


async def test_a_result_the_json_cannot_hold_reaches_the_model_as_text(dev_server: Any, ledger_url: str,
                                                                       task_queue: str) -> None:  # fmt: skip
    from handrail.components.agents import Agent
    from handrail.testing.builders import call, reply
    from handrail.tools import tool
    from tests.temporal._harness import by_turn

    class Thing:
        def __str__(self) -> str:
            return "<a thing>"

    made: list[int] = []

    @tool
    def give() -> object:
        """Give a thing."""
        made.append(1)
        return Thing()

    def agent() -> Agent:
        return Agent(chat_generator=by_turn([reply(call("give", {}, id="c1")), reply("ok")]), tools=[give])

    async with harness(dev_server.address, ledger_url, task_queue, {"a": agent}) as h:
        result = await h.result(await h.start("a", "give"))
    tool_message = next(m for m in result["messages"] if m["role"] == "tool")
    assert tool_message["content"][0]["tool_call_result"]["result"] == "<a thing>"
    assert tool_message["content"][0]["tool_call_result"]["error"] is False and made == [1]
