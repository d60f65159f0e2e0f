"""The agent of the MCP approval end-to-end tests: the stdio test double's tools, destructive ones paused for approval.

:func:`files_agent` is an agent factory (``factory(store) -> Agent``, as :class:`handrail.server.AgentRegistry`
takes them): the process that starts the run and the service that previews and resumes it import it from here.
Nothing but the toolset's own ``confirmation_strategy`` decides which calls ask: ``delete_file`` asks because the
server marks it destructive, and pauses into the store. The model is a :class:`ScriptedChatGenerator`, whose
script starts over in every process, so each process gives the part it plays: :data:`PAUSE` (the model asks for
``delete_file``) where the run starts, :data:`ANSWER` (the model's answer once it read the call's result) where
it resumes.

The double's log file (``HANDRAIL_MCP_DOUBLE_LOG``, from the environment of the process building the agent) goes
to the server process: it records each server process and each ``delete_file`` it ran. ``HANDRAIL_E2E_SEEN``
names a file that the hook :func:`record_tool_results` appends, before each model call, the tool results the
model is about to read (one JSON object a line): what the model was told, seen from outside the process.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole, State
from handrail.hooks import hook
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import ScriptedChatGenerator, call, reply
from handrail.tools import MCPToolset, StdioServer
from tests.mcp.server_double import LOG_ENV

__all__ = ["ANSWER", "PAUSE", "SEEN_ENV", "SERVER", "factory", "files_agent", "record_tool_results", "seen"]

SERVER = "files"
"""The server's name (its label in approvals and previews)."""
SEEN_ENV = "HANDRAIL_E2E_SEEN"
SCRIPT = Path(__file__).with_name("server_double.py")
PAUSE = [reply(call("delete_file", {"path": "notes.txt"}, "c1"))]
"""The model's script where the run starts: it asks to delete notes.txt (the call pauses)."""
ANSWER = [reply("Done with notes.txt.")]
"""The model's script where the run resumes: its answer once it read what became of the call."""


@hook
def record_tool_results(state: State) -> None:
    """Append the tool results of the next model input's last message to the file ``HANDRAIL_E2E_SEEN`` names."""
    path = os.environ.get(SEEN_ENV)
    last = state.data["messages"][-1] if state.data["messages"] else None
    if not path or last is None or last.role is not ChatRole.TOOL:
        return
    with open(path, "a", encoding="utf-8") as out:
        for result in last.tool_call_results:
            seen_now = {"tool": result.origin.tool_name, "result": result.text, "error": result.error}
            out.write(json.dumps(seen_now) + "\n")


def seen(path: Path) -> list[dict[str, Any]]:
    """What :func:`record_tool_results` wrote (empty when the model read no tool result)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def files_agent(store: Any, replies: list[ChatMessage] | None = None) -> Agent:
    """The agent: the double's tools over stdio; a call the server's hints say asks pauses into ``store``."""
    env = {LOG_ENV: os.environ[LOG_ENV]} if os.environ.get(LOG_ENV) else {}
    files = MCPToolset(
        StdioServer(sys.executable, [str(SCRIPT), "stdio"], env=env, name=SERVER),
        tool_names=["calendar.read", "delete_file"],
        confirmation_strategy=BreakpointConfirmationStrategy(snapshot_store=store),
    )
    return Agent(
        chat_generator=ScriptedChatGenerator(list(PAUSE if replies is None else replies)),
        tools=[files],
        hooks={"before_llm": [record_tool_results]},
    )


def factory(replies: list[ChatMessage]) -> Callable[[Any], Agent]:
    """:func:`files_agent` with the model's script of this process."""

    def build(store: Any) -> Agent:
        return files_agent(store, replies)

    return build
