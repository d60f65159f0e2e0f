from __future__ import annotations

import asyncio
import copy
import json
import threading
from typing import Any

import pytest

from handrail.core.serialization import object_from_dict
from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import ConfigurationTypeError, SerializationError
from handrail.human_in_the_loop import (
    AlwaysAskPolicy,
    AskOncePolicy,
    BlockingConfirmationStrategy,
    ConfirmationStrategy,
    HumanInTheLoopStrategy,
    NeverAskPolicy,
    RichConsoleUI,
    SimpleConsoleUI,
)
from handrail.human_in_the_loop.strategies import MAX_REFUSED_EDITS
from handrail.human_in_the_loop.templates import DEFAULT_MODIFY_TEMPLATE

from ._helpers import HaystackStyleUI, Lines, QueueUI, ScriptedInput, ScriptedUI

PARAMS: dict[str, Any] = {"city": "Oslo", "days": 3}
CALL: dict[str, Any] = {"tool_name": "get_weather", "tool_description": "Weather.", "tool_params": PARAMS}


def strategy(ui: Any, policy: Any = None, **templates: str) -> BlockingConfirmationStrategy:
    return BlockingConfirmationStrategy(
        confirmation_policy=policy if policy is not None else AlwaysAskPolicy(), confirmation_ui=ui, **templates
    )


async def decide(s: BlockingConfirmationStrategy, mode: str, **kwargs: Any) -> ToolExecutionDecision:
    args = {**CALL, "tool_call_id": "call_1", **kwargs}
    if mode == "sync":
        return s.run(**args)
    return await s.run_async(**args)


MODES = pytest.mark.parametrize("mode", ["sync", "async"])

# ----------------------------------------------------------------------------- policy x action


ANSWERS = {
    "confirm": (ConfirmationUIResult("confirm"), True, None, None),
    "confirm+feedback": (ConfirmationUIResult("confirm", feedback="fine"), True, "fine", None),
    "reject": (ConfirmationUIResult("reject"), False, None, None),
    "reject+feedback": (ConfirmationUIResult("reject", feedback="Not needed"), False, "Not needed", None),
    "modify": (ConfirmationUIResult("modify", new_tool_params={"city": "Bergen"}), True, None, {"city": "Bergen"}),
    "modify+feedback": (
        ConfirmationUIResult("modify", feedback="closer", new_tool_params={"city": "Bergen", "days": 3}),
        True,
        "closer",
        {"city": "Bergen", "days": 3},
    ),
    "modify-empty": (ConfirmationUIResult("modify", new_tool_params={}), True, None, None),
    "modify-none": (ConfirmationUIResult("modify"), True, None, None),
    "modify-same": (ConfirmationUIResult("modify", new_tool_params={"days": 3, "city": "Oslo"}), True, None, None),
}


@MODES
@pytest.mark.parametrize("policy_cls", [AlwaysAskPolicy, AskOncePolicy])
@pytest.mark.parametrize("name", list(ANSWERS))
async def test_asking_policies_turn_each_answer_into_a_decision(mode: str, policy_cls: type[Any], name: str) -> None:
    answer, execute, feedback, final = ANSWERS[name]
    ui = ScriptedUI([answer])
    decision = await decide(strategy(ui, policy_cls()), mode)
    assert decision == ToolExecutionDecision(
        "get_weather",
        execute=execute,
        tool_call_id="call_1",
        feedback=feedback,
        final_tool_params=final,
        decided_by="scripted",
    )
    assert ui.calls == [{**CALL, "injected_params": None}]
    assert ui.answers == []


@MODES
async def test_never_ask_policy_executes_without_asking(mode: str) -> None:
    ui = ScriptedUI()
    decision = await decide(strategy(ui, NeverAskPolicy()), mode)
    assert decision == ToolExecutionDecision("get_weather", execute=True, tool_call_id="call_1", decided_by="policy")
    assert ui.calls == []


@MODES
@pytest.mark.parametrize(
    ("answer", "asked_again"),
    [
        (ConfirmationUIResult("confirm"), False),
        (ConfirmationUIResult("modify", new_tool_params={}), False),  # a no-op modify is a confirm
        (ConfirmationUIResult("modify", new_tool_params=dict(PARAMS)), False),
        (ConfirmationUIResult("reject", feedback="no"), True),
        (ConfirmationUIResult("modify", new_tool_params={"city": "Bergen"}), True),
    ],
)
async def test_ask_once_policy_learns_only_from_confirms(
    mode: str, answer: ConfirmationUIResult, asked_again: bool
) -> None:
    ui = ScriptedUI([answer, ConfirmationUIResult("confirm")])
    s = strategy(ui, AskOncePolicy())
    await decide(s, mode)
    second = await decide(s, mode, tool_call_id="call_2")
    assert len(ui.calls) == (2 if asked_again else 1)
    assert second.decided_by == ("scripted" if asked_again else "policy")
    assert second.tool_call_id == "call_2"


def test_the_alias_and_the_protocol() -> None:
    assert HumanInTheLoopStrategy is BlockingConfirmationStrategy
    assert isinstance(strategy(ScriptedUI()), ConfirmationStrategy)


def test_decided_by_falls_back_to_the_ui_class_name() -> None:
    decision = strategy(HaystackStyleUI(ConfirmationUIResult("confirm"))).run(**CALL)
    assert decision.decided_by == "HaystackStyleUI"
    assert decision.tool_call_id is None


def test_tool_params_and_context_are_not_touched() -> None:
    class Mutating(ScriptedUI):
        def get_user_confirmation(
            self,
            tool_name: str,
            tool_description: str,
            tool_params: dict[str, Any],
            injected_params: dict[str, Any] | None = None,
        ) -> ConfirmationUIResult:
            tool_params["city"] = "changed"
            return ConfirmationUIResult("confirm")

    params = {"city": "Oslo", "nested": {"a": [1]}}
    frozen = copy.deepcopy(params)
    context = {"socket": object()}
    decision = strategy(Mutating()).run(
        tool_name="t", tool_description="d", tool_params=params, confirmation_strategy_context=context
    )
    assert decision.execute and decision.final_tool_params is None
    assert params == frozen


def test_console_uis_record_the_console_label() -> None:
    ui = SimpleConsoleUI(input_fn=ScriptedInput(["n", "why"]), output_fn=Lines())
    decision = strategy(ui).run(**CALL)
    assert decision == ToolExecutionDecision("get_weather", execute=False, feedback="why", decided_by="console")


def test_end_of_input_rejects_with_its_feedback() -> None:
    ui = SimpleConsoleUI(input_fn=ScriptedInput([]), output_fn=Lines())
    decision = strategy(ui).run(**CALL)
    assert decision.execute is False and decision.feedback == "No answer (end of input)"


# ----------------------------------------------------------------------------- templates


def test_render_methods_use_the_strategy_templates() -> None:
    default = strategy(ScriptedUI())
    assert default.render_reject("foo", None) == "Tool execution for 'foo' was rejected by the user."
    assert default.render_reject("test_tool", "Not needed") == (
        "Tool execution for 'test_tool' was rejected by the user. With user feedback: Not needed"
    )
    assert default.render_modify("bar", {"x": 99}, None) == (
        "The parameters for tool 'bar' were updated by the user to:\n{\"x\": 99}"
    )
    custom = strategy(
        ScriptedUI(),
        reject_template="No {tool_name}.",
        modify_template="{tool_name} now {final_tool_params}",
        user_feedback_template="({feedback})",
    )
    assert custom.render_reject("foo", "why") == "No foo. (why)"
    assert custom.render_modify("bar", {"x": 1}, "because") == 'bar now {"x": 1} (because)'


def test_decisions_keep_raw_feedback_not_rendered_text() -> None:
    decision = strategy(ScriptedUI([ConfirmationUIResult("reject", feedback="  raw  ")])).run(**CALL)
    assert decision.feedback == "  raw  "


# ----------------------------------------------------------------------------- validation and injection


def bad_days(params: dict[str, Any]) -> str | None:
    return None if isinstance(params.get("days"), int) else "'days' must be an integer"


@MODES
async def test_an_edit_failing_validation_is_refused_and_asked_again(mode: str) -> None:
    ui = ScriptedUI(
        [
            ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "days": "three"}),
            ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "days": 4}, feedback="ok now"),
        ]
    )
    policy = AskOncePolicy()
    decision = await decide(strategy(ui, policy), mode, validate_params=bad_days)
    assert decision.final_tool_params == {"city": "Bergen", "days": 4}
    assert decision.feedback == "ok now"
    assert len(ui.calls) == 2
    assert ui.notices == ["The edit of 'get_weather' was refused: 'days' must be an integer. Please answer again."]
    assert policy.export_memory() == {}


@MODES
async def test_validation_is_not_applied_to_confirms_and_rejects(mode: str) -> None:
    calls: list[dict[str, Any]] = []

    def validate(params: dict[str, Any]) -> str | None:
        calls.append(params)
        return "never valid"

    for answer in (ConfirmationUIResult("confirm"), ConfirmationUIResult("reject"), ConfirmationUIResult("modify")):
        await decide(strategy(ScriptedUI([answer])), mode, validate_params=validate)
    assert calls == []


@MODES
async def test_an_edit_of_an_injected_value_is_refused(mode: str) -> None:
    ui = ScriptedUI(
        [
            ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "user_id": 99}),
            ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "user_id": 7}),
        ]
    )
    decision = await decide(strategy(ui), mode, injected_params={"user_id": 7})
    assert ui.calls[0]["injected_params"] == {"user_id": 7}
    assert ui.notices == [
        "The edit of 'get_weather' was refused: 'user_id' comes from the agent's State and cannot be edited. "
        "Please answer again."
    ]
    # the injected value echoed back unchanged is not an argument of the model's call
    assert decision.final_tool_params == {"city": "Bergen"}


async def test_an_unchanged_argument_that_is_also_injected_is_kept() -> None:
    params = {"city": "Oslo", "user_id": 1}
    ui = ScriptedUI([ConfirmationUIResult("modify", new_tool_params={"city": "Rome", "user_id": 1})])
    decision = strategy(ui).run(tool_name="t", tool_description="d", tool_params=params, injected_params={"user_id": 2})
    assert decision.final_tool_params == {"city": "Rome", "user_id": 1}
    assert ui.notices == []


def test_validator_sees_only_the_model_arguments() -> None:
    seen: list[dict[str, Any]] = []
    ui = ScriptedUI([ConfirmationUIResult("modify", new_tool_params={"city": "Rome", "user_id": 7})])

    def validate(params: dict[str, Any]) -> str | None:
        seen.append(params)
        return None

    strategy(ui).run(**CALL, injected_params={"user_id": 7}, validate_params=validate)
    assert seen == [{"city": "Rome"}]


def test_a_ui_that_keeps_sending_bad_edits_ends_in_a_reject() -> None:
    bad = ConfirmationUIResult("modify", new_tool_params={"days": "x"})
    ui = ScriptedUI([bad] * MAX_REFUSED_EDITS)
    decision = strategy(ui).run(**CALL, validate_params=bad_days)
    assert decision.execute is False
    assert (
        decision.feedback
        == f"The edited arguments were refused {MAX_REFUSED_EDITS} times (last: 'days' must be an integer)."
    )
    assert len(ui.notices) == MAX_REFUSED_EDITS
    assert ui.notices[-1].endswith("Too many refused edits: the call is rejected.")


def test_a_ui_without_notify_is_simply_asked_again() -> None:
    ui = HaystackStyleUI(ConfirmationUIResult("modify", new_tool_params={"days": "x"}))
    decision = strategy(ui).run(**CALL, validate_params=bad_days)
    assert decision.execute is False  # asked MAX_REFUSED_EDITS times, then rejected


def test_console_ui_re_ask_loop_with_notify() -> None:
    source, sink = ScriptedInput(["m", "", '"four"', "m", "", "4"]), Lines()
    ui = SimpleConsoleUI(input_fn=source, output_fn=sink)
    decision = strategy(ui).run(**CALL, validate_params=bad_days)
    assert decision.final_tool_params == {"city": "Oslo", "days": 4}
    assert "! The edit of 'get_weather' was refused: 'days' must be an integer. Please answer again." in sink.lines
    assert sink.lines.count("\n--- Tool Execution Request ---") == 2


def test_console_ui_end_of_input_inside_the_re_ask_loop_rejects() -> None:
    ui = SimpleConsoleUI(input_fn=ScriptedInput(["m", "", '"four"']), output_fn=Lines())
    decision = strategy(ui).run(**CALL, validate_params=bad_days)
    assert decision == ToolExecutionDecision(
        "get_weather", execute=False, feedback="No answer (end of input)", decided_by="console"
    )


def test_haystack_style_uis_are_not_passed_injected_params_when_there_are_none() -> None:
    decision = strategy(HaystackStyleUI(ConfirmationUIResult("confirm"))).run(**CALL, injected_params={})
    assert decision.execute


def test_a_ui_returning_something_else_is_a_type_error() -> None:
    ui = ScriptedUI(["yes"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationTypeError, match="expected a ConfirmationUIResult"):
        strategy(ui).run(**CALL)


# ----------------------------------------------------------------------------- async


class BlockingUI:
    """A sync UI that blocks until another task releases it."""

    label = "blocking"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.threads: list[str] = []

    def get_user_confirmation(
        self, tool_name: str, tool_description: str, tool_params: dict[str, Any], injected_params: Any = None
    ) -> ConfirmationUIResult:
        self.threads.append(threading.current_thread().name)
        if not self.release.wait(5):
            return ConfirmationUIResult("reject", feedback="the event loop was blocked")
        return ConfirmationUIResult("confirm")

    def notify(self, message: str) -> None:
        self.threads.append(threading.current_thread().name)


async def test_run_async_with_a_sync_ui_does_not_block_the_event_loop() -> None:
    ui = BlockingUI()
    ticks: list[int] = []

    async def other_work() -> None:
        for i in range(3):
            ticks.append(i)
            await asyncio.sleep(0.01)
        ui.release.set()

    worker = asyncio.create_task(other_work())
    decision = await asyncio.wait_for(strategy(ui).run_async(**CALL), timeout=10)
    await worker
    assert decision.execute and decision.feedback is None
    assert ticks == [0, 1, 2]
    assert ui.threads[0] != threading.current_thread().name


async def test_run_async_notifies_a_sync_ui_in_a_worker_thread() -> None:
    ui = BlockingUI()
    ui.release.set()
    answers = [ConfirmationUIResult("modify", new_tool_params={"days": "x"}), ConfirmationUIResult("confirm")]
    ui.get_user_confirmation = lambda *a, **k: answers.pop(0)  # type: ignore[method-assign]
    decision = await strategy(ui).run_async(**CALL, validate_params=bad_days)
    assert decision.execute and decision.final_tool_params is None
    assert ui.threads and ui.threads[0] != threading.current_thread().name


async def test_concurrent_async_decisions_with_console_uis() -> None:
    sink = Lines()
    scripts = {f"call_{i}": ["n", f"reason {i}"] for i in range(4)}

    async def one(call_id: str) -> ToolExecutionDecision:
        ui = SimpleConsoleUI(input_fn=ScriptedInput(scripts[call_id]), output_fn=sink)
        return await strategy(ui).run_async(**CALL, tool_call_id=call_id)

    decisions = await asyncio.gather(*(one(cid) for cid in scripts))
    assert [d.feedback for d in decisions] == [f"reason {i}" for i in range(4)]
    assert [d.tool_call_id for d in decisions] == list(scripts)
    assert sink.lines.count("\n--- Tool Execution Request ---") == 4


async def test_custom_async_ui_fed_by_a_queue() -> None:
    ui = QueueUI()
    s = strategy(ui, AskOncePolicy())

    async def person() -> None:
        request = await ui.requests.get()
        assert request == {"tool_name": "get_weather", "tool_params": PARAMS, "injected": {"user_id": 1}}
        await ui.answers.put(ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "days": "x"}))
        await ui.requests.get()  # asked again after the refused edit
        await ui.answers.put(ConfirmationUIResult("modify", new_tool_params={"city": "Bergen", "days": 2}))

    answering = asyncio.create_task(person())
    decision = await asyncio.wait_for(
        s.run_async(**CALL, tool_call_id="c1", injected_params={"user_id": 1}, validate_params=bad_days), timeout=10
    )
    await answering
    assert decision == ToolExecutionDecision(
        "get_weather",
        execute=True,
        tool_call_id="c1",
        final_tool_params={"city": "Bergen", "days": 2},
        decided_by="web",
    )
    assert ui.notices == ["The edit of 'get_weather' was refused: 'days' must be an integer. Please answer again."]


def test_an_async_only_ui_cannot_be_used_by_the_sync_run() -> None:
    with pytest.raises(ConfigurationTypeError, match="use run_async"):
        strategy(QueueUI()).run(**CALL)


# ----------------------------------------------------------------------------- construction and serialization


def test_construction_checks_policy_and_ui() -> None:
    with pytest.raises(ConfigurationTypeError, match="confirmation_policy"):
        BlockingConfirmationStrategy(confirmation_policy=object(), confirmation_ui=ScriptedUI())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="confirmation_ui"):
        BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=object())  # type: ignore[arg-type]
    # Positional, as in Haystack (issue 20, item 1).
    ui = ScriptedUI()
    assert BlockingConfirmationStrategy(AlwaysAskPolicy(), ui).confirmation_ui is ui


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"confirmation_policy": AlwaysAskPolicy, "confirmation_ui": SimpleConsoleUI()},
            "confirmation_policy is the class 'AlwaysAskPolicy', not a policy object; pass an instance: "
            "AlwaysAskPolicy().",
        ),
        (
            {"confirmation_policy": AskOncePolicy(), "confirmation_ui": RichConsoleUI},
            "confirmation_ui is the class 'RichConsoleUI', not a UI object; pass an instance: RichConsoleUI().",
        ),
        (
            {"confirmation_policy": NeverAskPolicy(), "confirmation_ui": ScriptedUI},
            "confirmation_ui is the class 'ScriptedUI', not a UI object; pass an instance: ScriptedUI().",
        ),
    ],
    ids=["policy-class", "rich-ui-class", "custom-ui-class"],
)
def test_construction_refuses_a_class_instead_of_an_object(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationTypeError) as caught:
        BlockingConfirmationStrategy(**kwargs)
    assert str(caught.value) == message


@pytest.mark.parametrize("policy", [AlwaysAskPolicy(), NeverAskPolicy(), AskOncePolicy()])
@pytest.mark.parametrize("ui", [SimpleConsoleUI(), RichConsoleUI(), ScriptedUI()])
def test_serialization_round_trip(policy: Any, ui: Any) -> None:
    s = strategy(ui, policy, reject_template="No {tool_name}.", user_feedback_template="({feedback})")
    data = s.to_dict()
    assert data == {
        "type": "handrail.human_in_the_loop.strategies.BlockingConfirmationStrategy",
        "init_parameters": {
            "confirmation_policy": policy.to_dict(),
            "confirmation_ui": ui.to_dict(),
            "reject_template": "No {tool_name}.",
            "modify_template": DEFAULT_MODIFY_TEMPLATE,
            "user_feedback_template": "({feedback})",
        },
    }
    assert json.loads(json.dumps(data)) == data
    frozen = copy.deepcopy(data)
    for rebuilt in (BlockingConfirmationStrategy.from_dict(data), object_from_dict(data)):
        assert isinstance(rebuilt, BlockingConfirmationStrategy)
        assert type(rebuilt.confirmation_policy) is type(policy)
        assert type(rebuilt.confirmation_ui) is type(ui)
        assert rebuilt.to_dict() == data
    assert data == frozen


def test_the_alias_round_trips_to_the_real_class() -> None:
    data = HumanInTheLoopStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI()).to_dict()
    assert data["type"] == "handrail.human_in_the_loop.strategies.BlockingConfirmationStrategy"


def test_ask_once_memory_is_not_serialized_by_the_strategy() -> None:
    policy = AskOncePolicy()
    policy.update_after_confirmation("t", "d", {}, ConfirmationUIResult("confirm"))
    rebuilt = BlockingConfirmationStrategy.from_dict(strategy(ScriptedUI(), policy).to_dict())
    assert isinstance(rebuilt.confirmation_policy, AskOncePolicy)
    assert rebuilt.confirmation_policy.export_memory() == {}


def test_a_ui_without_to_dict_cannot_be_serialized() -> None:
    with pytest.raises(SerializationError, match="HaystackStyleUI"):
        strategy(HaystackStyleUI(ConfirmationUIResult("confirm"))).to_dict()


@pytest.mark.parametrize(
    "data",
    [
        {"type": "x"},
        {"type": "x", "init_parameters": {"confirmation_ui": SimpleConsoleUI().to_dict()}},
        {"type": "x", "init_parameters": {"confirmation_policy": "AlwaysAskPolicy", "confirmation_ui": {}}},
    ],
)
def test_from_dict_refuses_incomplete_data(data: dict[str, Any]) -> None:
    with pytest.raises(SerializationError):
        BlockingConfirmationStrategy.from_dict(data)


def test_from_dict_refuses_bad_templates() -> None:
    data = strategy(ScriptedUI()).to_dict()
    data["init_parameters"]["modify_template"] = "{oops}"
    with pytest.raises(ValueError, match="modify_template"):
        BlockingConfirmationStrategy.from_dict(data)


def test_repr() -> None:
    assert repr(strategy(SimpleConsoleUI(), NeverAskPolicy())).startswith(
        "BlockingConfirmationStrategy(confirmation_policy=NeverAskPolicy(), confirmation_ui="
    )
