"""Confirmation strategies: turn a proposed tool call into a :class:`ToolExecutionDecision`.

:class:`BlockingConfirmationStrategy` (alias :data:`HumanInTheLoopStrategy`) asks its policy
whether to ask, asks its UI, and turns the answer into a decision. The algorithm is written
once as a generator that yields what it needs from the UI (an answer, or a notice shown) and
receives the answers; :meth:`~BlockingConfirmationStrategy.run` and
:meth:`~BlockingConfirmationStrategy.run_async` are small drivers of it.
:class:`BreakpointConfirmationStrategy` (pause instead of asking) lives in
:mod:`~handrail.human_in_the_loop.breakpoint_strategy` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from handrail.core._threads import to_thread
from handrail.core.serialization import init_parameters, object_from_dict, object_to_dict, qualified_name
from handrail.dataclasses.decisions import ConfirmationUIResult, ToolExecutionDecision
from handrail.errors import ConfigurationTypeError, SerializationError
from handrail.human_in_the_loop._nested import copy_params
from handrail.human_in_the_loop.breakpoint_strategy import BreakpointConfirmationStrategy
from handrail.human_in_the_loop.policies import params_digest
from handrail.human_in_the_loop.templates import (
    DEFAULT_MODIFY_TEMPLATE,
    DEFAULT_REJECT_TEMPLATE,
    DEFAULT_USER_FEEDBACK_TEMPLATE,
    check_templates,
    render_modify,
    render_reject,
)
from handrail.human_in_the_loop.types import ConfirmationPolicy, ConfirmationUI, check_policy, refuse_class

__all__ = [
    "AsyncConfirmationUI",
    "BlockingConfirmationStrategy",
    "BreakpointConfirmationStrategy",
    "HumanInTheLoopStrategy",
    "MAX_REFUSED_EDITS",
    "ParamsValidator",
]

ParamsValidator = Callable[[dict[str, Any]], str | None]
"""Checks edited arguments (the tool's JSON Schema): returns None when valid, else the reason."""

MAX_REFUSED_EDITS = 10
"""After this many refused edits of one call, the call is rejected instead of asked again."""


@runtime_checkable
class AsyncConfirmationUI(Protocol):
    """A UI that asks without blocking the event loop (a web page, a chat, a queue)."""

    async def get_user_confirmation_async(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        injected_params: dict[str, Any] | None = None,
    ) -> ConfirmationUIResult:
        """Async form of :meth:`ConfirmationUI.get_user_confirmation`."""
        ...


@dataclass(frozen=True, slots=True)
class _Call:
    """One call being decided, as the drivers pass it to the UI."""

    tool_name: str
    tool_description: str
    tool_params: dict[str, Any]
    tool_call_id: str | None
    injected_params: dict[str, Any] = field(default_factory=dict)
    validate_params: ParamsValidator | None = None

    def ui_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "tool_name": self.tool_name,
            "tool_description": self.tool_description,
            "tool_params": copy_params(self.tool_params),
        }
        if self.injected_params:  # UIs written for Haystack do not take injected_params
            kwargs["injected_params"] = dict(self.injected_params)
        return kwargs


@dataclass(frozen=True, slots=True)
class _Ask:
    """Request: ask the UI about the call; the driver sends back the ConfirmationUIResult."""


@dataclass(frozen=True, slots=True)
class _Notify:
    """Request: show ``message`` through the UI's ``notify`` (if any); the driver sends back None."""

    message: str


_Request = _Ask | _Notify
_Flow = Generator[_Request, ConfirmationUIResult | None, ToolExecutionDecision]


class BlockingConfirmationStrategy:
    """Ask a person (where the policy says so) and turn the answer into a decision.

    Steps of :meth:`run` (and :meth:`run_async`):

    1. The policy says not to ask → execute as proposed (``decided_by="policy"``).
    2. Ask the UI (passing the State-injected values, read-only).
    3. A modify that changes an injected (State) key, or whose arguments fail
       ``validate_params``, is refused: the UI's ``notify`` shows why and the person is asked
       again (at most :data:`MAX_REFUSED_EDITS` times, then the call is rejected).
    4. Tell the policy the (normalized) answer through ``update_after_confirmation``.
    5. Return the decision: confirm → ``execute=True, final_tool_params=None``; reject →
       ``execute=False`` with the raw feedback; modify → ``execute=True`` with the new arguments
       (they replace the proposed ones). A modify with ``{}``/None, or with arguments equal to
       the proposed ones, is a confirm.

    Feedback stays raw in the decision: the templates are rendered when the decision is applied,
    through :meth:`render_reject` / :meth:`render_modify`.

    Args:
        confirmation_policy: Decides whether to ask.
        confirmation_ui: Asks the person: has ``get_user_confirmation`` and/or
            ``get_user_confirmation_async``, optionally ``notify(message)`` and a ``label``
            recorded as ``decided_by`` (else its class name).
        reject_template: Tool-result text of a rejected call (placeholder ``{tool_name}``).
        modify_template: Text explaining an edit (``{tool_name}``, ``{final_tool_params}``).
        user_feedback_template: Appended after one space when there is feedback (``{feedback}``).

    Raises:
        ConfigurationTypeError: When the policy or UI is a class instead of an object or lacks the required
            methods, or a template is not a str.
        ConfigurationError: When a template is malformed or uses an unknown placeholder.

    Examples:
        >>> from handrail.human_in_the_loop import AlwaysAskPolicy, SimpleConsoleUI
        >>> answers = iter(["n", "Wrong city"])
        >>> ui = SimpleConsoleUI(input_fn=lambda prompt: next(answers), output_fn=lambda line: None)
        >>> strategy = BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=ui)
        >>> decision = strategy.run(tool_name="get_weather", tool_description="Weather.",
        ...                         tool_params={"city": "Paris"}, tool_call_id="call_1")
        >>> decision.execute, decision.feedback, decision.decided_by
        (False, 'Wrong city', 'console')
        >>> strategy.render_reject(decision.tool_name, decision.feedback)
        "Tool execution for 'get_weather' was rejected by the user. With user feedback: Wrong city"
    """

    def __init__(
        self,
        confirmation_policy: ConfirmationPolicy,
        confirmation_ui: ConfirmationUI | AsyncConfirmationUI,
        *,
        reject_template: str = DEFAULT_REJECT_TEMPLATE,
        modify_template: str = DEFAULT_MODIFY_TEMPLATE,
        user_feedback_template: str = DEFAULT_USER_FEEDBACK_TEMPLATE,
    ) -> None:
        check_policy(confirmation_policy)
        _check_ui(confirmation_ui)
        check_templates(
            reject_template=reject_template,
            modify_template=modify_template,
            user_feedback_template=user_feedback_template,
        )
        self.confirmation_policy = confirmation_policy
        """Decides whether to ask."""
        self.confirmation_ui = confirmation_ui
        """Asks the person."""
        self.reject_template = reject_template
        """Tool-result text of a rejected call."""
        self.modify_template = modify_template
        """Text explaining an edited call."""
        self.user_feedback_template = user_feedback_template
        """Appended after one space when there is feedback."""

    def run(
        self,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        *,
        confirmation_strategy_context: dict[str, Any] | None = None,
        injected_params: dict[str, Any] | None = None,
        validate_params: ParamsValidator | None = None,
    ) -> ToolExecutionDecision:
        """Decide one call, blocking while the person answers.

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The model's arguments (not modified).
            tool_call_id: Copied into the decision.
            confirmation_strategy_context: Accepted and ignored (custom strategies use it).
            injected_params: ``{parameter: value}`` the tool reads from State: shown read-only; an
                edit that changes one is refused.
            validate_params: Checks edited arguments (the model's arguments only, without the
                injected ones); returns None when valid, else the reason shown to the person.

        Returns:
            The decision (see the class docstring).

        Raises:
            ConfigurationTypeError: When the UI has only ``get_user_confirmation_async`` (use
                :meth:`run_async`), or returns something other than a ConfirmationUIResult.
        """
        call = _Call(tool_name, tool_description, tool_params, tool_call_id, injected_params or {}, validate_params)
        flow = self._flow(call)
        reply: ConfirmationUIResult | None = None
        while True:
            try:
                request = flow.send(reply)
            except StopIteration as done:
                decision: ToolExecutionDecision = done.value
                return decision
            if isinstance(request, _Ask):
                reply = self._ask(call)
            else:
                self._notify(request.message)
                reply = None

    async def run_async(
        self,
        *,
        tool_name: str,
        tool_description: str,
        tool_params: dict[str, Any],
        tool_call_id: str | None = None,
        confirmation_strategy_context: dict[str, Any] | None = None,
        injected_params: dict[str, Any] | None = None,
        validate_params: ParamsValidator | None = None,
    ) -> ToolExecutionDecision:
        """Decide one call without blocking the event loop.

        Uses the UI's ``get_user_confirmation_async`` (and ``notify_async``) when it has them;
        otherwise the sync methods run in a worker thread (``asyncio.to_thread``).

        Args:
            tool_name: The tool.
            tool_description: Its description.
            tool_params: The model's arguments (not modified).
            tool_call_id: Copied into the decision.
            confirmation_strategy_context: Accepted and ignored (custom strategies use it).
            injected_params: See :meth:`run`.
            validate_params: See :meth:`run`.

        Returns:
            The decision (see the class docstring).

        Raises:
            ConfigurationTypeError: When the UI returns something other than a ConfirmationUIResult.
        """
        call = _Call(tool_name, tool_description, tool_params, tool_call_id, injected_params or {}, validate_params)
        flow = self._flow(call)
        reply: ConfirmationUIResult | None = None
        while True:
            try:
                request = flow.send(reply)
            except StopIteration as done:
                decision: ToolExecutionDecision = done.value
                return decision
            if isinstance(request, _Ask):
                reply = await self._ask_async(call)
            else:
                await self._notify_async(request.message)
                reply = None

    def render_reject(self, tool_name: str, feedback: str | None) -> str:
        """Render this strategy's reject text (plus feedback) for a rejected call.

        Args:
            tool_name: The rejected tool.
            feedback: The decision's raw feedback (None or blank: none).

        Returns:
            The tool-result text the model reads.
        """
        return render_reject(
            tool_name,
            feedback,
            reject_template=self.reject_template,
            user_feedback_template=self.user_feedback_template,
        )

    def render_modify(self, tool_name: str, final_tool_params: Mapping[str, Any], feedback: str | None) -> str:
        """Render this strategy's modify text (plus feedback) for an edited call.

        Args:
            tool_name: The edited tool.
            final_tool_params: The arguments the call runs with (rendered as JSON).
            feedback: The decision's raw feedback (None or blank: none).

        Returns:
            The user-message text the model reads before the edited call.
        """
        return render_modify(
            tool_name,
            final_tool_params,
            feedback,
            modify_template=self.modify_template,
            user_feedback_template=self.user_feedback_template,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}``; policy and UI as nested envelopes.

        Returns:
            ``{"type": ..., "init_parameters": {"confirmation_policy": {...}, "confirmation_ui": {...},
            "reject_template": str, "modify_template": str, "user_feedback_template": str}}``.

        Raises:
            SerializationError: When the policy or the UI has no ``to_dict``.
        """
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "confirmation_policy": object_to_dict(self.confirmation_policy),
                "confirmation_ui": object_to_dict(self.confirmation_ui),
                "reject_template": self.reject_template,
                "modify_template": self.modify_template,
                "user_feedback_template": self.user_feedback_template,
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BlockingConfirmationStrategy:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified; dotted paths are trusted).

        Raises:
            SerializationError: When ``init_parameters``, the policy or the UI is missing, or a
                class cannot be imported.
        """
        kwargs = copy_params(init_parameters(dict(data) if isinstance(data, Mapping) else data, cls))
        for key in ("confirmation_policy", "confirmation_ui"):
            if not isinstance(kwargs.get(key), Mapping):
                raise SerializationError(f"{cls.__name__} data has no '{key}' envelope: {data!r}")
            kwargs[key] = object_from_dict(kwargs[key])
        return cls(**kwargs)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(confirmation_policy={self.confirmation_policy!r}, "
            f"confirmation_ui={self.confirmation_ui!r})"
        )

    # The algorithm, written once.

    def _flow(self, call: _Call) -> _Flow:
        policy = self.confirmation_policy
        if not policy.should_ask(call.tool_name, call.tool_description, call.tool_params):
            return ToolExecutionDecision(
                call.tool_name, execute=True, tool_call_id=call.tool_call_id, decided_by="policy"
            )
        refused = 0
        while True:
            answer = yield _Ask()
            if not isinstance(answer, ConfirmationUIResult):
                raise ConfigurationTypeError(
                    f"{type(self.confirmation_ui).__name__} returned {answer!r} for tool '{call.tool_name}'; "
                    f"expected a ConfirmationUIResult."
                )
            outcome = _settle(answer, call)
            if isinstance(outcome, str):
                refused += 1
                refusal = f"The edit of '{call.tool_name}' was refused: {outcome}."
                if refused < MAX_REFUSED_EDITS:
                    yield _Notify(f"{refusal} Please answer again.")
                    continue
                yield _Notify(f"{refusal} Too many refused edits: the call is rejected.")
                outcome = ConfirmationUIResult(
                    "reject", feedback=f"The edited arguments were refused {refused} times (last: {outcome})."
                )
            policy.update_after_confirmation(call.tool_name, call.tool_description, call.tool_params, outcome)
            return self._decision(outcome, call)

    def _decision(self, answer: ConfirmationUIResult, call: _Call) -> ToolExecutionDecision:
        return ToolExecutionDecision(
            call.tool_name,
            execute=answer.action != "reject",
            tool_call_id=call.tool_call_id,
            feedback=answer.feedback,
            final_tool_params=answer.new_tool_params if answer.action == "modify" else None,
            decided_by=_label(self.confirmation_ui),
        )

    # The I/O, sync and async.

    def _ask(self, call: _Call) -> ConfirmationUIResult:
        ask = getattr(self.confirmation_ui, "get_user_confirmation", None)
        if ask is None:
            raise ConfigurationTypeError(
                f"{type(self.confirmation_ui).__name__} has only get_user_confirmation_async; "
                f"use run_async (an async Agent run) with it."
            )
        result: ConfirmationUIResult = ask(**call.ui_kwargs())
        return result

    def _notify(self, message: str) -> None:
        notify = getattr(self.confirmation_ui, "notify", None)
        if callable(notify):
            notify(message)

    async def _ask_async(self, call: _Call) -> ConfirmationUIResult:
        ask_async = getattr(self.confirmation_ui, "get_user_confirmation_async", None)
        if ask_async is not None:
            result: ConfirmationUIResult = await ask_async(**call.ui_kwargs())
            return result
        return await to_thread(self._ask, call)

    async def _notify_async(self, message: str) -> None:
        notify_async = getattr(self.confirmation_ui, "notify_async", None)
        if callable(notify_async):
            await notify_async(message)
        elif callable(getattr(self.confirmation_ui, "notify", None)):
            await to_thread(self._notify, message)  # a console notify waits for the console lock


HumanInTheLoopStrategy = BlockingConfirmationStrategy
"""Alias of :class:`BlockingConfirmationStrategy` (Haystack's name)."""


def _settle(answer: ConfirmationUIResult, call: _Call) -> ConfirmationUIResult | str:
    """Normalize an answer: a no-op modify becomes a confirm; a bad edit becomes the reason it is refused."""
    if answer.action != "modify":
        return answer
    edited = answer.new_tool_params or {}
    for key, value in edited.items():
        if key in call.injected_params:
            shown = call.tool_params.get(key, call.injected_params[key])
            if params_digest({key: value}) != params_digest({key: shown}):
                return f"'{key}' comes from the agent's State and cannot be edited"
    # Injected values echoed back unchanged are not arguments of the model's call.
    final = {k: v for k, v in edited.items() if k in call.tool_params or k not in call.injected_params}
    if not final or params_digest(final) == params_digest(call.tool_params):
        return ConfirmationUIResult("confirm", feedback=answer.feedback)
    if call.validate_params is not None:
        reason = call.validate_params(copy_params(final))
        if reason is not None:
            return reason
    return ConfirmationUIResult("modify", feedback=answer.feedback, new_tool_params=final)


def _label(ui: object) -> str:
    label = getattr(ui, "label", None)
    return label if isinstance(label, str) and label.strip() else type(ui).__name__


def _check_ui(ui: object) -> None:
    refuse_class(ui, "confirmation_ui", "a UI")
    if not any(callable(getattr(ui, m, None)) for m in ("get_user_confirmation", "get_user_confirmation_async")):
        raise ConfigurationTypeError(
            f"confirmation_ui must be a ConfirmationUI; {type(ui).__name__} has neither get_user_confirmation "
            f"nor get_user_confirmation_async."
        )
