"""The agents the browser tests run: a model that makes the calls its first user message lists, and two tools.

The first user message is JSON, ``{"steps": [[["transfer", {"amount": 5}], ...], ...]}``: one model step per
inner list, each making those calls; once every step was called the model answers ``done: `` and the tool results
(a rejection's result carries the person's feedback, so the tests see what reached the model).
"""

from __future__ import annotations

import json
from typing import Any

from handrail.dataclasses import ChatMessage, ChatRole
from handrail.testing import call, reply

POLICY = (
    "Check **the amount** before approving; see [the runbook](https://example.org/runbook). "
    "[x](javascript:window.__pwned=1)"
)
"""The payer's policy description: markdown with a safe link and a ``javascript:`` one that must stay text."""


def transfer(amount: int, memo: str = "") -> str:
    """Send money.

    Args:
        amount: How much, in euros.
        memo: A note for the payee.
    """
    return f"sent {amount}" + (f" ({memo})" if memo else "")


def label_files(paths: list[str], label: str) -> str:
    """Label files.

    Args:
        paths: Which files.
        label: The label.
    """
    return f"labelled {len(paths)} files {label}"


def plan_replies(messages: list[ChatMessage], tools: Any) -> ChatMessage:
    """The model: the next step's calls, or the answer once every step was called."""
    first = next((m.text or "" for m in messages if m.role is ChatRole.USER), "{}")
    steps = json.loads(first).get("steps", [])
    done = sum(1 for m in messages if m.role is ChatRole.ASSISTANT and m.tool_calls)
    if done < len(steps):
        return reply(*(call(name, args, f"c{done}_{i}") for i, (name, args) in enumerate(steps[done])))
    results = [str(r.result) for m in messages if m.role is ChatRole.TOOL for r in m.tool_call_results]
    return reply("done: " + "; ".join(results))


def agent_file(confirmation: str) -> str:
    """An agent file of the planner and both tools, with this ``confirmation:`` block (YAML, indented)."""
    return (
        "generator:\n"
        "  type: handrail.testing.FunctionChatGenerator\n"
        "  init_parameters: {function: tests.browser._agents.plan_replies}\n"
        "tools: [tests.browser._agents.transfer, tests.browser._agents.label_files]\n"
        f"confirmation:\n{confirmation}"
        "allowed_modules: [tests.browser]\n"
    )


AGENT_FILES = {
    "payer": agent_file(f"  transfer: {{ask: always, description: {json.dumps(POLICY)}}}\n  label_files: always\n"),
    "expiring": agent_file("  transfer: {ask: always, expires_after_seconds: 2}\n  label_files: always\n"),
}
"""``{name: agent file text}``: what the served agents directory holds."""
