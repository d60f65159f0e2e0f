from __future__ import annotations

import subprocess
import sys

import handrail.human_in_the_loop
from handrail.dataclasses import breakpoints, decisions
from handrail.human_in_the_loop import (
    breakpoint_strategy,
    policies,
    snapshots,
    strategies,
    templates,
    types,
    user_interfaces,
)


def test_package_exports_exactly_all() -> None:
    expected = [
        "AlwaysAskPolicy",
        "ApprovalService",
        "AskOncePolicy",
        "AskWhenPolicy",
        "BlockingConfirmationStrategy",
        "BreakpointConfirmationStrategy",
        "ConfirmationPolicy",
        "ConfirmationStrategy",
        "ConfirmationUI",
        "ConfirmationUIResult",
        "HITLBreakpointException",
        "HumanInTheLoopStrategy",
        "NeverAskPolicy",
        "PausingStrategy",
        "PendingApproval",
        "RichConsoleUI",
        "SimpleConsoleUI",
        "ToolExecutionDecision",
        "get_tool_calls_and_descriptions_from_snapshot",
        "list_pending",
        "record_decision",
        "with_decision",
    ]
    assert handrail.human_in_the_loop.__all__ == expected  # sorted, exactly
    public = {n for n in vars(handrail.human_in_the_loop) if not n.startswith("_")}
    modules = {"breakpoint_strategy", "policies", "snapshots", "strategies", "templates", "types", "user_interfaces",
               "service"}  # fmt: skip
    assert public - set(expected) <= modules


def test_re_exports_are_the_same_objects() -> None:
    assert handrail.human_in_the_loop.ToolExecutionDecision is decisions.ToolExecutionDecision
    assert handrail.human_in_the_loop.ConfirmationUIResult is decisions.ConfirmationUIResult
    assert handrail.human_in_the_loop.ConfirmationUI is types.ConfirmationUI
    assert handrail.human_in_the_loop.HITLBreakpointException is breakpoints.HITLBreakpointException
    assert (
        handrail.human_in_the_loop.BreakpointConfirmationStrategy is breakpoint_strategy.BreakpointConfirmationStrategy
    )
    assert handrail.human_in_the_loop.list_pending is snapshots.list_pending


def test_public_modules_have_all() -> None:
    for module in (breakpoint_strategy, policies, snapshots, strategies, templates, user_interfaces):
        assert module.__all__ == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), (module.__name__, name)


def test_importing_the_package_does_not_import_rich() -> None:
    code = "import sys, handrail.human_in_the_loop; print(sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
