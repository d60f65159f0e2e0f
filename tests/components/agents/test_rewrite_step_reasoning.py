"""A step rewritten after a person's decision keeps the model's reasoning beside its text."""

from __future__ import annotations

from handrail.components.agents._confirm import Applied, rewrite_step
from handrail.dataclasses import ChatMessage, ReasoningContent, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision


def test_the_rebuilt_reply_keeps_its_reasoning_and_a_rejected_call_alone_has_none() -> None:
    c1, c2 = ToolCall("t", {"a": 1}, "c1"), ToolCall("t", {"a": 2}, "c2")
    reply = ChatMessage.from_assistant("Both.", reasoning=ReasoningContent("think", {"sig": "s"}), tool_calls=[c1, c2])
    results = [ChatMessage.from_tool("r1", c1), ChatMessage.from_tool("r2", c2)]
    rejected = Applied("reject", ToolExecutionDecision("t", False, "c1"), "no")

    alone, _, kept, _ = rewrite_step([reply], results, {"c1": rejected})

    assert alone.reasoning is None and alone.text is None and alone.tool_calls == [c1]
    assert kept.reasoning == ReasoningContent("think", {"sig": "s"})
    assert kept.text == "Both." and kept.tool_calls == [c2]
