"""The golden runs whose saved histories the replay test replays (``python -m tests.temporal._golden`` records them).

Each scenario is an agent (built the same way on every call), a question and the decisions a person sends. A
change to the workflow or the step machine that makes an old history replay differently fails the replay test:
such a change must be made compatible (``workflow.patched``) before it ships, or running workflows would break.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses.state import State
from handrail.hooks import hook
from handrail.testing.builders import call, reply
from handrail.tools import Tool, create_tool_from_function
from tests.temporal._harness import asking, by_turn

TASK_QUEUE = "golden"
"""The task queue the golden histories were recorded on (the replay registers the agents under it)."""


def _transfer() -> Tool:
    def transfer(amount: int, to: str = "bob") -> str:
        """Transfer money.

        Args:
            amount: How much.
            to: To whom.
        """
        return f"sent {amount} to {to}"

    return create_tool_from_function(transfer)


def _approve() -> Agent:
    script = [reply(call("transfer", {"amount": 5}, id="c1")), reply("done")]
    return Agent(chat_generator=by_turn(script), tools=[_transfer()], confirmation_strategies={"transfer": asking()})


def _edit_reject() -> Agent:
    script = [
        reply("Two transfers.", call("transfer", {"amount": 5}, id="c1"), call("transfer", {"amount": 9}, id="c2")),
        reply("done"),
    ]
    return Agent(chat_generator=by_turn(script), tools=[_transfer()], confirmation_strategies={"transfer": asking()})


def _hooks_state() -> Agent:
    def lookup(account: str, region: str) -> dict[str, Any]:
        """Look up an account.

        Args:
            account: The account.
            region: The region (from State).
        """
        return {"balance": 42, "region": region}

    tool = create_tool_from_function(
        lookup, inputs_from_state={"region": "region"}, outputs_to_state={"balance": {"source": "balance"}}
    )

    @hook
    def count_llm(state: State) -> None:
        state.set("llm_calls", (state.get("llm_calls") or 0) + 1)

    script = [reply(call("lookup", {"account": "a1"}, id="c1")), reply("balance 42")]
    return Agent(
        chat_generator=by_turn(script),
        tools=[tool],
        hooks={"before_llm": [count_llm]},
        state_schema={"region": {"type": str}, "balance": {"type": int}, "llm_calls": {"type": int}},
    )


def _long() -> Agent:
    def step(n: int) -> str:
        """One step.

        Args:
            n: The step's number.
        """
        return f"step {n}"

    script = [reply(call("step", {"n": n}, id=f"c{n}")) for n in range(30)] + [reply("finished")]
    return Agent(chat_generator=by_turn(script), tools=[create_tool_from_function(step)], max_agent_steps=40)


@dataclass
class Scenario:
    agent: Callable[[], Agent]
    question: str
    decisions: list[dict[str, Any]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


SCENARIOS: dict[str, Scenario] = {
    "approve": Scenario(_approve, "send 5", [{"call_id": "c1", "decision": "approve"}]),
    "edit_reject": Scenario(
        _edit_reject,
        "send two",
        [
            {"call_id": "c1", "decision": "edit", "arguments": {"amount": 4, "to": "carol"}},
            {"call_id": "c2", "decision": "reject", "feedback": "too much"},
        ],
    ),
    "hooks_state": Scenario(_hooks_state, "balance?", state={"region": "eu"}),
    "long": Scenario(_long, "go", options={"continue_after_events": 60}),
}


def agents() -> dict[str, Callable[[], Agent]]:
    return {name: s.agent for name, s in SCENARIOS.items()}


async def record(address: str, directory: Path, ledger: str) -> None:
    """Run every scenario on the server at ``address`` and write each run's histories (all its runs) as JSON."""
    from handrail import temporal as ht

    store = ht.open_temporal_store(ledger)
    client = await ht.connect(address, store)
    async with ht.create_worker(client, TASK_QUEUE, agents(), store):
        for name, s in SCENARIOS.items():
            run_id = await ht.start_run(
                client,
                name,
                s.question,
                task_queue=TASK_QUEUE,
                run_id=f"golden-{name}",
                options=ht.RunOptions(**s.options),
                **s.state,
            )
            for d in s.decisions:
                while not any(w["call_id"] == d["call_id"] for w in (await ht.describe(client, run_id))["waiting"]):
                    await asyncio.sleep(0.05)
                await ht.decide(client, run_id, d.pop("call_id"), d.pop("decision"), decided_by="alice", **d)
            await ht.get_result(client, run_id)
            histories = []
            async for execution in client.list_workflows(f"WorkflowId = '{run_id}'"):
                history = await client.get_workflow_handle(run_id, run_id=execution.run_id).fetch_history()
                histories.append(json.loads(history.to_json()))
            (directory / f"{name}.json").write_text(json.dumps(histories, indent=1) + "\n")


if __name__ == "__main__":  # python -m tests.temporal._golden ADDRESS DIR LEDGER_URL
    asyncio.run(record(sys.argv[1], Path(sys.argv[2]), sys.argv[3]))
