"""Importable helpers for the Agent's human-in-the-loop tests."""

from __future__ import annotations

from typing import Any

from handrail.dataclasses.decisions import ToolExecutionDecision


class ScriptedStrategy:
    """Decides from a table {tool_name: ("confirm" | "reject" | {new params}, feedback)} and records every ask."""

    def __init__(self, table: dict[str, Any] | None = None) -> None:
        self.table = table or {}
        self.asked: list[dict[str, Any]] = []

    def run(self, *, tool_name: str, tool_description: str, tool_params: dict[str, Any],
            tool_call_id: str | None = None, confirmation_strategy_context: dict[str, Any] | None = None,
            ) -> ToolExecutionDecision:  # fmt: skip
        self.asked.append({"tool_name": tool_name, "tool_params": tool_params, "tool_call_id": tool_call_id,
                           "context": confirmation_strategy_context})  # fmt: skip
        action, feedback = self.table.get(tool_name, ("confirm", None))
        if action == "confirm":
            return ToolExecutionDecision(tool_name, True, tool_call_id, feedback)
        if action == "reject":
            return ToolExecutionDecision(tool_name, False, tool_call_id, feedback)
        return ToolExecutionDecision(tool_name, True, tool_call_id, feedback, final_tool_params=action)

    def to_dict(self) -> dict[str, Any]:
        return {"type": f"{__name__}.ScriptedStrategy", "init_parameters": {"table": self.table}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScriptedStrategy:
        return cls(**data["init_parameters"])


def echo(x: int) -> dict[str, int]:
    """Echo x."""
    return {"echoed": x}
