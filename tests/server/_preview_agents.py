"""The agent of the preview tests: one tool per kind of preview (and per way a preview goes wrong).

Its model reads the first user message as JSON ``{"tool": name, "arguments": {...}}`` and makes that one call; once
the call has a result it answers ``"done"``. :data:`GATE` holds the slow preview until a test sets it.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from handrail.components.agents import Agent
from handrail.dataclasses import ChatMessage, ChatRole
from handrail.human_in_the_loop import BreakpointConfirmationStrategy
from handrail.testing import FunctionChatGenerator, call, reply
from handrail.tools import Preview, Tool, Toolset, create_tool_from_function, tool

GATE = threading.Event()
"""Set it to let the slow preview return (a test clears it first and sets it at its end)."""
CALLS: list[str] = []
"""The tools whose preview function ran, in order (a test clears it first)."""


def send_email(to: str, body: str) -> str:
    """Send an email.

    Args:
        to: The address.
        body: The text.
    """
    return f"sent to {to}"


def email_preview(arguments: dict[str, Any]) -> Preview:
    CALLS.append("send_email")
    return Preview("markdown", f"**To:** {arguments['to']}\n\n{arguments['body']}", title=f"Email to {arguments['to']}")


def write_file(path: str, text: str) -> str:
    """Write a file.

    Args:
        path: Where.
        text: What.
    """
    return "written"


def file_preview(arguments: dict[str, Any]) -> Preview:
    CALLS.append("write_file")
    return Preview("diff", f"--- {arguments['path']}\n+++ {arguments['path']}\n-old\n+{arguments['text']}")


def run_sql(query: str) -> str:
    """Run SQL.

    Args:
        query: The statement.
    """
    return "ok"


def sql_preview(arguments: dict[str, Any]) -> str:
    CALLS.append("run_sql")
    return arguments["query"].upper()


def order(items: list[str]) -> str:
    """Order items.

    Args:
        items: What to buy.
    """
    return "ordered"


def cost_preview(arguments: dict[str, Any]) -> Preview:
    CALLS.append("order")
    return Preview("json", json.dumps({"items": len(arguments["items"]), "total_eur": 3 * len(arguments["items"])}))


def sign(document: str, signer: str) -> str:
    """Sign a document.

    Args:
        document: Which one.
        signer: Who signs (from State).
    """
    return "signed"


def sign_preview(arguments: dict[str, Any]) -> str:
    CALLS.append("sign")
    return f"{arguments.get('signer')} signs {arguments['document']}"


def plain(x: int) -> int:
    """No preview.

    Args:
        x: A number.
    """
    return x


def failing(secret: str) -> str:
    """A preview that raises.

    Args:
        secret: Text the model chose.
    """
    return secret


def failing_preview(arguments: dict[str, Any]) -> str:
    CALLS.append("failing")
    raise ValueError(f"cannot preview {arguments['secret']}")


def slow(x: int) -> int:
    """A preview that hangs until GATE is set.

    Args:
        x: A number.
    """
    return x


def slow_preview(arguments: dict[str, Any]) -> str:
    CALLS.append("slow")
    GATE.wait(60)
    return f"late {arguments['x']}"


def bad_kind(x: int) -> int:
    """A preview of a kind there is not.

    Args:
        x: A number.
    """
    return x


def bad_kind_preview(arguments: dict[str, Any]) -> Preview:
    return Preview("html", "<b>x</b>")  # type: ignore[arg-type]


def wrong_type(x: int) -> int:
    """A preview that returns a number.

    Args:
        x: A number.
    """
    return x


def wrong_type_preview(arguments: dict[str, Any]) -> Any:
    return 42


def _tools() -> list[Tool | Toolset]:
    made = [
        create_tool_from_function(send_email, preview=email_preview),
        create_tool_from_function(write_file, preview=file_preview),
        create_tool_from_function(order, preview=cost_preview),
        create_tool_from_function(sign, inputs_from_state={"signer": "signer"}, preview=sign_preview),
        create_tool_from_function(plain),
        create_tool_from_function(failing, preview=failing_preview),
        create_tool_from_function(slow, preview=slow_preview),
        create_tool_from_function(bad_kind, preview=bad_kind_preview),
        create_tool_from_function(wrong_type, preview=wrong_type_preview),
    ]
    return [*made, Toolset([create_tool_from_function(run_sql, preview=sql_preview)])]


TOOL_NAMES = ("send_email", "write_file", "order", "sign", "plain", "failing", "slow", "bad_kind", "wrong_type",
              "run_sql")  # fmt: skip


def one_call(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    if any(m.role is ChatRole.TOOL for m in messages):
        return reply("done")
    first = next(m.text or "" for m in messages if m.role is ChatRole.USER)
    asked = json.loads(first)
    return reply(call(asked["tool"], asked["arguments"], "c1"))


def toolbox(store: Any) -> Agent:
    """Every tool pauses for approval into ``store``."""
    strategy = BreakpointConfirmationStrategy(snapshot_store=store)
    return Agent(chat_generator=FunctionChatGenerator(one_call), tools=_tools(),
                 confirmation_strategies={name: strategy for name in TOOL_NAMES},
                 state_schema={"signer": {"type": str}})  # fmt: skip


@tool(preview=email_preview)
def mail(to: str, body: str) -> str:
    """Send an email (the agent file's tool).

    Args:
        to: The address.
        body: The text.
    """
    return f"sent to {to}"


@tool(preview=slow_preview)
def hang(x: int) -> int:
    """A tool whose preview hangs (in a server process nobody sets GATE).

    Args:
        x: A number.
    """
    return x


AGENT_FILE = """\
generator:
  type: handrail.testing.FunctionChatGenerator
  init_parameters: {function: tests.server._preview_agents.one_call}
tools: [tests.server._preview_agents.mail, tests.server._preview_agents.hang]
confirmation: {mail: always, hang: always}
allowed_modules: [tests.server]
"""
"""The agent as a file (its tools are ``@tool(preview=...)`` Tools named by dotted path)."""
