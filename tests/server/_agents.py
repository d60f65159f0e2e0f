"""The agents the service tests run: a payer whose model is computed from the conversation, and its tool.

The model (:func:`pay_replies`) reads the first user message, e.g. ``"pay 5 7 | 9"``: one step per ``|``-separated
group, one ``transfer`` call per amount of the group; once every group has been called it answers with the tool
results (and what follows ``note:`` in the message, as a model may repeat untrusted text). Being a function of
the conversation, one agent instance serves any number of runs and processes (a ScriptedChatGenerator's script
would restart in every process).

``transfer`` writes one line per execution to the ledger file named by ``HANDRAIL_TEST_LEDGER`` (the tests count
executions there, across processes) and keeps the amounts of this process in :data:`SENT`. With
``HANDRAIL_TEST_GATE`` naming a directory that holds a file ``hold``, it signals through the FIFO ``started``
and then blocks on the FIFO ``release``: the kill -9 tests stop a process in the middle of a call so (and with
``hold-build``, :class:`GatedGenerator` stops one while it builds the agent, right after it claimed a run).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import FunctionChatGenerator, call, reply
from handrail.tools import create_tool_from_function

LEDGER_ENV = "HANDRAIL_TEST_LEDGER"
GATE_ENV = "HANDRAIL_TEST_GATE"
SENT: list[int] = []
"""The amounts ``transfer`` sent in this process (a test clears it first)."""


def transfer(amount: int) -> str:
    """Send money.

    Args:
        amount: How much.
    """
    ledger = os.environ.get(LEDGER_ENV)
    if ledger:
        with open(ledger, "a", encoding="utf-8") as out:
            out.write(f"{amount} {os.getpid()}\n")
    _held("hold", "started")
    SENT.append(amount)
    return f"sent {amount}"


def _held(flag: str, signal: str) -> None:
    """With the file ``flag`` in the gate directory: write ``signal`` to the FIFO of that name, block on ``release``."""
    gate = os.environ.get(GATE_ENV)
    if gate and Path(gate, flag).exists():
        with open(Path(gate, signal), "w", encoding="utf-8") as told:  # a FIFO: waits for the test to read
            told.write(f"{signal}\n")
        with open(Path(gate, "release"), encoding="utf-8") as release:  # a FIFO nobody writes: blocks until killed
            release.read()


class GatedGenerator(FunctionChatGenerator):
    """The payer's model, whose building is held by the gate's ``hold-build`` (it signals through ``building``).

    A resumer builds a run's agent after it claimed the run and before it records the run ``running``: a process
    held there and killed dies holding a claim, with nothing written.
    """

    def __init__(self, function: Any, tools: Any = None) -> None:
        _held("hold-build", "building")
        super().__init__(function, tools=tools)


def _steps(messages: list[ChatMessage]) -> list[list[int]]:
    first = next((m.text or "" for m in messages if m.role is ChatRole.USER), "")
    return [[int(n) for n in re.findall(r"\d+", group)] for group in first.partition("note:")[0].split("|")]


def pay_replies(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    """The payer's model: the next step's transfer calls, or the answer once every step was called."""
    steps = _steps(messages)
    done = sum(1 for m in messages if m.role is ChatRole.ASSISTANT and m.tool_calls)
    if done < len(steps) and steps[done]:
        return reply(*(call("transfer", {"amount": a}, f"c{done}_{i}") for i, a in enumerate(steps[done])))
    results = [r.result for m in messages if m.role is ChatRole.TOOL for r in m.tool_call_results]
    first = next((m.text or "" for m in messages if m.role is ChatRole.USER), "")
    note = first.partition("note:")[2]
    return reply("paid: " + "; ".join(results) + (f" (note:{note})" if note else ""))


def payer(store: Any, **settings: Any) -> Agent:
    """The payer agent: every transfer pauses for approval into ``store`` (``settings`` go to the strategy)."""
    strategy = BreakpointConfirmationStrategy(snapshot_store=store, **settings)
    return Agent(chat_generator=FunctionChatGenerator(pay_replies), tools=[create_tool_from_function(transfer)],
                 confirmation_strategies={"transfer": strategy})  # fmt: skip


AGENT_FILE = """\
generator:
  type: handrail.testing.FunctionChatGenerator
  init_parameters: {function: tests.server._agents.pay_replies}
tools: [tests.server._agents.transfer]
confirmation: {transfer: always}
allowed_modules: [tests.server]
"""
"""The payer as an agent file (what ``handrail worker --agents DIR`` runs)."""

GATED_AGENT_FILE = AGENT_FILE.replace("handrail.testing.FunctionChatGenerator", "tests.server._agents.GatedGenerator")
"""The payer with the :class:`GatedGenerator` model."""


def ledger_lines(path: Path) -> list[str]:
    """The ledger's lines (one per execution of ``transfer``), empty when nothing ran."""
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []
