"""A durable run whose MCP call ``slow`` is in flight when the test kills this process (``python -m`` this, DIR).

``delete_file`` pauses into DIR (the toolset's default for a destructive tool), which makes the run durable;
``slow`` is explicitly allowed, so it runs at once, recorded in the ledger as running before it is sent.
"""

from __future__ import annotations

import sys
from pathlib import Path

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage
from handrail.human_in_the_loop import BlockingConfirmationStrategy, BreakpointConfirmationStrategy, NeverAskPolicy
from handrail.human_in_the_loop.user_interfaces import SimpleConsoleUI
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools import MCPToolset
from tests.mcp.conftest import stdio_spec

SLOW_CALL = call("slow", {"seconds": 120}, id="k1")


def durable_agent(directory: str | Path, replies: list[ChatMessage]) -> Agent:
    """The agent of both processes: the test double over stdio, its snapshots in ``directory``."""
    toolset = MCPToolset(
        stdio_spec(), tool_names=["slow", "delete_file"], call_timeout=300,
        confirmation_strategy=BreakpointConfirmationStrategy(str(directory)),
    )  # fmt: skip
    allow = BlockingConfirmationStrategy(NeverAskPolicy(), SimpleConsoleUI())
    return Agent(
        chat_generator=ScriptedChatGenerator(replies), tools=[toolset], confirmation_strategies={"slow": allow}
    )


if __name__ == "__main__":
    agent = durable_agent(sys.argv[1], [reply(SLOW_CALL), reply("unreachable")])
    agent.run([ChatMessage.from_user("Wait two minutes.")])
