"""Human-in-the-loop approval inside the step machine: after a call's arguments pass its schema, before it runs.

The Agent's tool step calls :meth:`Approvals.gate` before each batch of calls runs. For every
call whose tool has a confirmation strategy it yields one ``AskApproval`` effect (the
drivers run the strategies, sync or async), checks the decisions, and returns per call
either the invocation to run (possibly with edited arguments) or the rejection result.
:func:`rewrite_step` then lays out the step's history: rejection pairs, explanation messages, one assistant
message with the surviving calls, and their results in call order.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from handrail.components.agents._tool_defaults import default_strategy
from handrail.components.effects import AskApproval, Persist
from handrail.components.tools._effects import Invocation
from handrail.components.tools._step import Held, ToolStepOptions, make_invocation
from handrail.core._threads import to_thread
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, ReasoningContent, TextContent, ToolCall
from handrail.dataclasses.decisions import ToolExecutionDecision
from handrail.dataclasses.state import State
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.human_in_the_loop._approval_settings import pause_needed
from handrail.human_in_the_loop.templates import is_expiry_rejection, render_expired, render_modify, render_reject
from handrail.human_in_the_loop.types import is_pausing_strategy
from handrail.tools._validation import unknown_parameters

if TYPE_CHECKING:
    from handrail.components.agents._ledger import Ledger
    from handrail.components.agents._run_state import RunState

__all__ = ["Applied", "Approvals", "ConfirmRequest", "confirm_async", "confirm_sync", "find_strategy",
           "rewrite_step"]  # fmt: skip

StrategyKey = str | tuple[str, ...]


def find_strategy(strategies: Mapping[StrategyKey, Any] | None, tool_name: str, tool: object = None) -> Any:
    """The strategy for ``tool_name``: exact key, then the first tuple key holding it, then ``"*"``.

    With ``tool`` given, a tool no key covers gets the confirmation it brings itself (its ``confirmation_default``,
    :mod:`handrail.components.agents._tool_defaults`); an explicit key always wins.
    """
    found = _explicit_strategy(strategies, tool_name)
    if found is None and tool is not None:
        return default_strategy(tool)
    return found


def _explicit_strategy(strategies: Mapping[StrategyKey, Any] | None, tool_name: str) -> Any:
    if not strategies:
        return None
    found = strategies.get(tool_name)
    if found is not None:
        return found
    for key, strategy in strategies.items():
        if isinstance(key, tuple) and tool_name in key:
            return strategy
    return strategies.get("*")


@dataclass(slots=True)
class ConfirmRequest:
    """One call to decide."""

    strategy: Any
    """The tool's confirmation strategy."""
    invocation: Invocation
    """The call as it would run now."""

    @property
    def tool_params(self) -> dict[str, Any]:
        """The model's arguments plus the State-injected values."""
        return {**self.invocation.arguments, **self.invocation.injected}


@dataclass(frozen=True, slots=True)
class Applied:
    """A decision as applied to one call."""

    kind: Literal["confirm", "reject", "modify"]
    decision: ToolExecutionDecision
    text: str | None = None
    """The rendered reject text or modify explanation."""
    call: ToolCall | None = None
    """For ``modify``: the call with the new arguments (same id)."""


@functools.cache
def _accepted(cls: type, method: str) -> frozenset[str]:
    try:
        params = inspect.signature(getattr(cls, method)).parameters
    except (TypeError, ValueError, AttributeError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return frozenset({"injected_params", "validate_params"})
    return frozenset(params)


def _validator(inv: Invocation) -> Any:
    def validate(params: dict[str, Any]) -> str | None:
        changed = sorted(k for k, v in inv.injected.items() if k in params and params[k] != v)
        if changed:
            return f"{changed} come from the agent's State and cannot be edited."
        edited = {k: v for k, v in params.items() if k not in inv.injected}
        return unknown_parameters(inv.tool.name, inv.tool.parameters, edited) or inv.tool.arguments_error(edited)

    return validate


def _strategy_kwargs(req: ConfirmRequest, context: dict[str, Any] | None, method: str) -> dict[str, Any]:
    inv = req.invocation
    kwargs: dict[str, Any] = {
        "tool_name": inv.tool.name,
        "tool_description": getattr(inv.tool, "approval_description", None) or inv.tool.description,
        "tool_params": req.tool_params,
        "tool_call_id": inv.call.id,
        "confirmation_strategy_context": context,
    }
    accepted = _accepted(type(req.strategy), method)  # type: ignore[arg-type]
    if "injected_params" in accepted:
        kwargs["injected_params"] = dict(inv.injected)
    if "validate_params" in accepted:
        kwargs["validate_params"] = _validator(inv)
    return kwargs


def _checked(decision: Any, req: ConfirmRequest) -> ToolExecutionDecision:
    call = req.invocation.call
    if not isinstance(decision, ToolExecutionDecision):
        raise ConfigurationTypeError(
            f"{type(req.strategy).__name__}.run returned {type(decision).__name__} for call '{call.id}' "
            f"to '{call.tool_name}'; it must return a ToolExecutionDecision."
        )
    return decision


def confirm_sync(requests: list[ConfirmRequest], context: dict[str, Any] | None) -> list[ToolExecutionDecision]:
    """Run the strategies one after another (prompts never interleave); ``context`` goes to each by identity."""
    return [_checked(r.strategy.run(**_strategy_kwargs(r, context, "run")), r) for r in requests]


async def confirm_async(requests: list[ConfirmRequest], context: dict[str, Any] | None) -> list[ToolExecutionDecision]:
    """Run the strategies' ``run_async`` (or ``run`` in a worker thread), one after another."""
    decisions = []
    for req in requests:
        if callable(getattr(req.strategy, "run_async", None)):
            raw = await req.strategy.run_async(**_strategy_kwargs(req, context, "run_async"))
        else:
            raw = await to_thread(req.strategy.run, **_strategy_kwargs(req, context, "run"))
        decisions.append(_checked(raw, req))
    return decisions


def _render_reject(strategy: Any, tool_name: str, feedback: str | None) -> str:
    own = getattr(strategy, "render_reject", None)
    return str(own(tool_name, feedback)) if callable(own) else render_reject(tool_name, feedback)


def _render_modify(strategy: Any, tool_name: str, params: dict[str, Any], feedback: str | None) -> str:
    own = getattr(strategy, "render_modify", None)
    return str(own(tool_name, params, feedback)) if callable(own) else render_modify(tool_name, params, feedback)


@dataclass
class Approvals:
    """How a run decides its calls: which strategy answers which tool; what was decided goes to the run's state."""

    strategies: Mapping[StrategyKey, Any]
    context: dict[str, Any] | None
    run: RunState
    """The run's state: the step's calls, the calls held and the decisions applied are kept there."""
    options: ToolStepOptions | None = None
    """The tool step's options (set by the Agent once they exist), used to rebuild edited calls."""
    tools: dict[str, Any] = field(default_factory=dict)
    """The tools of the calls gated so far, by name: a tool's own confirmation default is found through them."""

    def strategy_of(self, tool_name: str) -> Any:
        """The strategy deciding calls to ``tool_name``: an explicit one, else the tool's own default."""
        return find_strategy(self.strategies, tool_name, self.tools.get(tool_name))

    def description_of(self, tool_name: str) -> str | None:
        """What the person deciding calls to ``tool_name`` reads about it: its ``approval_description``, if any."""
        described = getattr(self.tools.get(tool_name), "approval_description", None)
        return described if isinstance(described, str) else None

    @property
    def ledger(self) -> Ledger | None:
        """The run's ledger when calls are recorded: known decisions and recorded outcomes are reused."""
        return self.run.ledger

    def gate(
        self, invocations: list[Invocation], state: State
    ) -> Generator[AskApproval | Persist, Any, list[Invocation | ChatMessage | Held]]:
        """Decide every call that has a strategy.

        Yields one ``AskApproval`` effect for the calls a strategy must decide now, and a ``Persist`` effect when
        the ledger recorded an outcome given up (``unknown_outcome="fail"``), which must be durable before any call
        runs.

        Returns:
            Per invocation: the invocation to run, the tool message that answers it (a rejection, or a result
            recorded in the ledger), or ``Held`` for a call held by a pausing strategy.
        """
        out: list[Invocation | ChatMessage | Held] = list(invocations)
        asks: list[tuple[int, ConfirmRequest]] = []
        ledger = self.ledger
        run = self.run
        for i, inv in enumerate(invocations):
            self.tools[inv.tool.name] = inv.tool
            strategy = find_strategy(self.strategies, inv.tool.name, inv.tool)
            if ledger is None:
                if strategy is not None:
                    asks.append((i, ConfirmRequest(strategy, inv)))
                continue
            entry = ledger.entries.get(inv.call.id or "")
            started = entry is not None and entry.status in ("running", "done", "failed")
            awaiting = entry is not None and not started  # held at a pause: it runs only as a decision says
            decision = ledger.decision_for(inv.call, run.step_calls) if strategy is not None or awaiting else None
            if (started and decision is None) or (strategy is None and not awaiting):
                out[i] = self._recorded(inv, state)  # past its approval already, or never asked: from the record
            elif decision is not None:
                applied = self._apply(ConfirmRequest(strategy, inv), decision, state)
                out[i] = self._recorded(applied, state) if type(applied) is Invocation else applied
            elif entry is None and is_pausing_strategy(strategy) and not self._pauses(strategy, inv):
                policy = ToolExecutionDecision(inv.tool.name, True, inv.call.id, decided_by="policy")
                applied = self._apply(ConfirmRequest(strategy, inv), policy, state)  # its policy says: no person
                out[i] = self._recorded(applied, state) if type(applied) is Invocation else applied
            elif strategy is None or is_pausing_strategy(strategy):  # still undecided: held again
                ledger.hold(inv.call, ConfirmRequest(strategy, inv).tool_params)
                run.held.append(inv.call)
                out[i] = Held(inv.call)
            else:
                asks.append((i, ConfirmRequest(strategy, inv)))
        if ledger is not None and ledger.unsaved:
            yield Persist()
        if not asks:
            return out
        decisions = yield AskApproval(run.bound.set([r.invocation for _, r in asks]))
        if not isinstance(decisions, list) or len(decisions) != len(asks):
            raise ConfigurationError(f"Expected a list of {len(asks)} decisions, got {decisions!r:.200}.")
        for (i, req), decision in zip(asks, decisions, strict=True):
            applied = self._apply(req, decision, state)
            out[i] = self._recorded(applied, state) if ledger is not None and type(applied) is Invocation else applied
        return out

    @staticmethod
    def _pauses(strategy: Any, inv: Invocation) -> bool:
        """Whether a pausing strategy holds this new call (its policy asks; no policy: always)."""
        req = ConfirmRequest(strategy, inv)
        return pause_needed(strategy, inv.tool.name, inv.tool.description, req.tool_params)

    def _recorded(self, inv: Invocation, state: State) -> Invocation | ChatMessage:
        """``inv`` itself when it is to run, else its outcome as recorded in the ledger."""
        assert self.ledger is not None and self.options is not None
        action, message = self.ledger.replay(inv, state, self.options)
        return inv if action == "run" or message is None else message

    def _apply(self, req: ConfirmRequest, decision: ToolExecutionDecision, state: State) -> Invocation | ChatMessage:
        inv = req.invocation
        call = inv.call
        if decision.tool_call_id not in (None, call.id) or decision.tool_name != call.tool_name:
            raise ConfigurationError(
                f"A decision for call '{decision.tool_call_id}' to '{decision.tool_name}' was given for call "
                f"'{call.id}' to '{call.tool_name}'."
            )
        assert call.id is not None
        if not decision.execute:
            expired = is_expiry_rejection(decision)  # nobody rejected it: the text must not say a person did
            text = render_expired(call.tool_name) if expired else _render_reject(req.strategy, call.tool_name,
                                                                                 decision.feedback)  # fmt: skip
            self.run.applied[call.id] = Applied("reject", decision, text)
            self._record(call, inv.arguments, decision)
            return ChatMessage.from_tool(text, call, error=True)
        params = decision.final_tool_params
        effective = req.tool_params
        if params is None or params == effective or params == inv.arguments:
            self.run.applied[call.id] = Applied("confirm", decision)
            self._record(call, inv.arguments, decision)
            return inv
        problem = _validator(inv)(params)
        if problem is not None:
            raise ConfigurationError(
                f"The edited arguments for call '{call.id}' to '{call.tool_name}' are refused: {problem}. "
                f"Nothing was run."
            )
        args = {k: v for k, v in params.items() if k not in inv.injected}
        new_call = ToolCall(tool_name=call.tool_name, arguments=args, id=call.id, extra=call.extra)
        assert self.options is not None
        key = inv.kwargs.get(inv.tool.roles.call_id_param or "", call.id)
        edited = make_invocation(new_call, inv.tool, args, state, self.options, key)
        text = _render_modify(req.strategy, call.tool_name, args, decision.feedback)
        self.run.applied[call.id] = Applied("modify", decision, text, new_call)
        self._record(call, args, decision)
        return edited

    def _record(self, call: ToolCall, arguments: dict[str, Any], decision: ToolExecutionDecision) -> None:
        ledger = self.ledger
        if ledger is None:
            return
        entry = ledger.entries.get(call.id or "")
        if entry is None or (
            entry.status in ("pending", "approved", "rejected")
            and (entry.decision is None or not decision.same_as(entry.decision))
        ):
            ledger.decided(call, arguments, decision)


def _without_calls(message: ChatMessage, calls: list[ToolCall], keep_text: bool) -> ChatMessage:
    # The text keeps the model's reasoning beside it (ReasoningContent); a call shown alone has neither.
    parts: list[Any] = [p for p in message._content if keep_text and type(p) in (TextContent, ReasoningContent)]
    return ChatMessage(ChatRole.ASSISTANT, [*parts, *calls], message.name, message.meta)


def rewrite_step(
    replies: list[ChatMessage], results: list[ChatMessage], applied: Mapping[str, Applied]
) -> list[ChatMessage]:
    """Lay out a step whose calls were rejected or modified, so the model reads what a person decided.

    Returns:
        The messages that replace ``replies + results``: rejection pairs (the call alone, then
        its error result), the explanation messages of modifications, one assistant message
        with the surviving calls (edited arguments, same ids), and their results in call order.
    """
    pairs: list[ChatMessage] = []
    explanations: list[ChatMessage] = []
    rebuilt: list[ChatMessage] = []
    rejected = {cid for cid, a in applied.items() if a.kind == "reject"}
    by_id = {r._content[0].origin.id: r for r in results}  # type: ignore[union-attr]
    for reply in replies:
        calls = reply.tool_calls
        if not calls:
            rebuilt.append(reply)
            continue
        kept: list[ToolCall] = []
        for c in calls:
            entry = applied.get(c.id or "")
            if entry is not None and entry.kind == "reject":
                pairs += [_without_calls(reply, [c], keep_text=False), by_id[c.id or ""]]
            elif entry is not None and entry.kind == "modify":
                assert entry.text is not None and entry.call is not None
                explanations.append(ChatMessage.from_user(entry.text))
                kept.append(entry.call)
            else:
                kept.append(c)
        if kept or any(t.strip() for t in reply.texts):
            rebuilt.append(_without_calls(reply, kept, keep_text=True))
    rest = [r for r in results if r._content[0].origin.id not in rejected]  # type: ignore[union-attr, operator]
    return [*pairs, *explanations, *rebuilt, *rest]
