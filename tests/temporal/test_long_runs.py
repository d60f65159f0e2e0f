"""Long conversations stay in Temporal's limits: continue-as-new with the run's snapshot, big payloads by reference."""

from __future__ import annotations

from typing import Any

from handrail import temporal as ht
from handrail.components.agents import Agent
from handrail.testing import ScriptedChatGenerator
from handrail.testing.builders import call, reply
from handrail.tools import create_tool_from_function
from tests.temporal._harness import harness


def _counting_agent(steps: int, result_size: int, calls: list[int]) -> Agent:
    def step(n: int) -> str:
        """One step.

        Args:
            n: The step's number.
        """
        calls.append(n)
        return f"step {n} " + "x" * result_size

    script = [reply(call("step", {"n": n}, id=f"c{n}")) for n in range(steps)] + [reply("finished")]
    return Agent(
        chat_generator=ScriptedChatGenerator(script), tools=[create_tool_from_function(step)], max_agent_steps=steps + 1
    )


async def test_a_run_of_500_steps_continues_as_new_and_finishes(
    dev_server: Any, ledger_url: str, task_queue: str
) -> None:
    calls: list[int] = []
    agent = _counting_agent(500, 10, calls)
    options = ht.RunOptions(continue_after_events=400)
    async with harness(dev_server.address, ledger_url, task_queue, {"long": agent}) as h:
        run_id = await h.start("long", "go", options=options)
        result = await h.result(run_id, timeout=900)
        status = await ht.describe(h.client, run_id)
    assert result["answer"] == "finished" and result["step_count"] == 501
    assert calls == list(range(500))  # every step once, none repeated across the continues
    assert result["continued"] >= 5  # ~7 events a step: a fresh history about every 57 steps
    assert status["history_length"] <= 400 + 20  # the last run's history only
    assert result["usage"]["tool_calls"] == 500 and result["usage"]["model_calls"] == 501
    tool_messages = [m for m in result["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 500  # the whole conversation survived every continue-as-new


async def test_two_megabytes_of_messages_go_by_reference(dev_server: Any, ledger_url: str, task_queue: str) -> None:
    calls: list[int] = []
    agent = _counting_agent(8, 300_000, calls)  # 8 x 300 KB of tool results: 2.4 MB in every later model call
    async with harness(dev_server.address, ledger_url, task_queue, {"big": agent}) as h:
        run_id = await h.start("big", "go")
        result = await h.result(run_id)
        history = await h.client.get_workflow_handle(run_id).fetch_history()
    assert result["answer"] == "finished" and calls == list(range(8))
    tool_results = [m["content"][0]["tool_call_result"]["result"] for m in result["messages"] if m["role"] == "tool"]
    assert sum(map(len, tool_results)) > 2_000_000
    biggest = max(e.ByteSize() for e in history.events)
    assert biggest < 256 * 1024  # no event near Temporal's payload warning: big payloads are references
