"""The workflow that drives one agent run: handrail's third driver, next to ``Agent.run`` and ``run_async``.

The step machine (the same code ``Agent.run`` drives) runs inside the workflow on the agent's workflow twin
(:mod:`handrail.temporal._catalog`); the workflow executes its effects the Temporal way:

============  ====================================================================================
effect        in the workflow
============  ====================================================================================
CallModel     the ``handrail.call_model`` activity (local by default: one history event), retried
RunTools      one ``handrail.run_tool`` activity per call, through the ledger (exactly once per call)
AskApproval   the policy decides who is asked; held calls wait for ``decide`` Updates, expiry is a
              durable timer with the policy's expiry action
RunHooks      the ``handrail.run_hooks`` activity on the State's JSON, which replaces the State
============  ====================================================================================

Before a model call, once the history is long (``continue_after_events``, or Temporal suggests it), the run
continues as new from its snapshot: the same machine resumes at that model call in a fresh history. The workflow
is deterministic (its clock is ``workflow.now()``; the machine takes no time and no randomness), so a worker that
replays a history reaches the same state; changing the loop so that an old history no longer replays is caught by
the replay tests (``tests/temporal/histories``).
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from handrail.components.agents._confirm import _validator, find_strategy
    from handrail.components.effects import AskApproval, CallModel, Effect, RunHooks, RunTools, ToolOutcome, from_json
    from handrail.core._typed_json import encode_value
    from handrail.dataclasses.chat_message import ChatMessage
    from handrail.dataclasses.decisions import ToolExecutionDecision
    from handrail.errors import HandrailError
    from handrail.human_in_the_loop._approval_settings import approval_settings, pause_needed, team_policy
    from handrail.temporal import _records, _registry
    from handrail.temporal._activities import UNKNOWN_OUTCOME, state_from_json, state_to_json
    from handrail.temporal._asking import Waiting, digest, expires
    from handrail.temporal._types import WORKFLOW_NAME, DecisionInput, HookInput, ModelInput, RunInput, ToolInput

__all__ = ["AgentRunWorkflow"]

_NOT_RETRIED = ["BadReplies", "UnknownAgentError", "ConfigurationError"]
_KEEP_DECIDED = 500
_NOT_STATE = frozenset({"messages", "last_message", "step_count", "token_usage", "tool_call_counts", "exit_reason"})
"""How many decided call ids a run carries across continue-as-new (a late duplicate of one is ignored)."""


def _failure(exc: BaseException) -> ApplicationError:
    """A handrail error as a workflow failure that is not retried (the same history would fail the same way)."""
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)  # shown as "Type: message"


@workflow.defn(name=WORKFLOW_NAME)
class AgentRunWorkflow:
    """One agent run. Its id is the handrail run id; ``decide`` Updates answer its approvals; ``status`` shows it."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self._inp = inp
        self._waiting: dict[str, Waiting] = {}
        self._decided: dict[str, str] = dict(inp.decided)
        self._answered: dict[str, str] = dict(inp.answered)
        """The digest of the final decision of each question, by its number (``Waiting.asked``, as a str)."""
        self._status = "running"
        self._usage: dict[str, int] = {"model_calls": 0, "tool_calls": 0, "approvals": 0, **inp.usage}
        self._exit_reason: str | None = None
        self._encoded = _EncodedMessages()
        self._agent: Any = None

    # -- the run ------------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: RunInput) -> dict[str, Any]:
        if not _registry.is_traced(workflow.info().task_queue):
            return await self._run(inp)
        try:
            result = await self._run(inp)
        except workflow.ContinueAsNewError:  # the run goes on in the next workflow run: its span comes at its end
            raise
        except asyncio.CancelledError as exc:
            self._traced("closed", exc)
            raise
        except Exception as exc:
            self._traced("failed", exc)
            raise
        self._traced("done", None)
        return result

    def _traced(self, status: str, error: BaseException | None) -> None:
        """The run's ``invoke_agent`` span, once it ended (a workflow span: made when not replaying)."""
        from handrail.temporal._tracing import run_span

        run_span(self._agent, self._inp.agent, workflow.info().workflow_id, status,
                 self._usage["model_calls"], self._exit_reason, error)  # fmt: skip

    async def _run(self, inp: RunInput) -> dict[str, Any]:
        try:
            agent = _registry.catalog_for(workflow.info().task_queue).twin(inp.agent)
            self._agent = agent
            state = {k: _decode(v, k) for k, v in inp.state.items()}
            if inp.snapshot is not None:
                from handrail.dataclasses.snapshot import AgentSnapshot

                run = agent.start([], snapshot=AgentSnapshot.from_dict(inp.snapshot), **state)
            else:
                run = agent.start([ChatMessage.from_dict(m) for m in inp.messages], **state)
        except (HandrailError, ValueError, TypeError) as exc:  # the same input fails the same way: not retried
            raise _failure(exc) from exc
        with run:
            result: Any = None
            while True:
                try:
                    effect = run.send(result)
                except (HandrailError, ValueError, TypeError) as exc:
                    self._status = "failed"
                    raise _failure(exc) from exc
                if effect is None:
                    break
                result = await self._execute(run, agent, effect)
        data = run.result
        self._status = "done"
        self._exit_reason = data.get("exit_reason") if isinstance(data, dict) else None
        last = data.get("last_message")
        return {
            "run_id": workflow.info().workflow_id,
            "agent": inp.agent,
            "exit_reason": self._exit_reason,
            "answer": last.text if last is not None else None,
            "last_message": last.to_dict() if last is not None else None,
            "messages": [m.to_dict() for m in data.get("messages", [])],
            "step_count": data.get("step_count"),
            "token_usage": encode_value(data.get("token_usage"), "token_usage"),
            "tool_call_counts": dict(data.get("tool_call_counts") or {}),
            "state": {k: encode_value(v, k) for k, v in data.items() if k not in _NOT_STATE},
            "usage": dict(self._usage),
            "continued": inp.continued,
        }

    async def _execute(self, run: Any, agent: Any, effect: Effect) -> Any:
        match effect:
            case CallModel():
                return await self._call_model(run, agent, effect)
            case RunTools():
                return await self._run_tools(run, effect)
            case AskApproval():
                return await self._ask(run, agent, effect)
            case RunHooks():
                return await self._run_hooks(run, effect)
            case _:  # Persist, LoadStores, Finish, Emit: nothing to do here (no ledger, stores or callback in a twin)
                if type(effect).__name__ == "Pause":
                    raise ApplicationError("A breakpoint cannot pause a Temporal run.", type="Unsupported",
                                           non_retryable=True)  # fmt: skip
                return None

    # -- model calls and hooks ---------------------------------------------------------------------------------

    async def _light(self, name: str, arg: Any, attempts: int, timeout: float) -> Any:
        """A model call or hooks: a local activity (default) or a remote one, retried ``attempts`` times."""
        retry = RetryPolicy(initial_interval=timedelta(milliseconds=200), maximum_attempts=attempts,
                            non_retryable_error_types=_NOT_RETRIED)  # fmt: skip
        if self._inp.options.local_model_calls:
            return await workflow.execute_local_activity(name, arg, start_to_close_timeout=timedelta(seconds=timeout),
                                                         retry_policy=retry)  # fmt: skip
        return await workflow.execute_activity(name, arg, start_to_close_timeout=timedelta(seconds=timeout),
                                               heartbeat_timeout=timedelta(seconds=max(timeout / 10, 5)),
                                               retry_policy=retry)  # fmt: skip

    async def _call_model(self, run: Any, agent: Any, effect: CallModel) -> list[ChatMessage]:
        info = workflow.info()
        if (
            info.get_current_history_length() >= self._inp.options.continue_after_events
            or info.is_continue_as_new_suggested()
        ):
            self._continue_as_new(run, agent)
        opts = self._inp.options
        inp = ModelInput(self._inp.agent, self._encoded.text(effect.messages), list(effect.tools), info.workflow_id,
                         self._usage["model_calls"] + 1)  # fmt: skip
        try:
            replies = await self._light("handrail.call_model", inp, opts.model_attempts, opts.model_timeout_seconds)
        except ActivityError as exc:
            self._status = "failed"
            raise ApplicationError(f"The model call failed: {exc.cause or exc}", type="ModelCallFailed",
                                   non_retryable=True) from exc  # fmt: skip
        self._usage["model_calls"] += 1
        return [ChatMessage.from_dict(r) for r in replies]

    async def _run_hooks(self, run: Any, effect: RunHooks) -> None:
        data = run.context.state.data
        inp = HookInput(self._inp.agent, effect.point, state_to_json(data))
        try:
            new = await self._light("handrail.run_hooks", inp, 1, 60.0)
        except ActivityError as exc:
            self._status = "failed"
            raise ApplicationError(f"The {effect.point} hooks failed: {exc.cause or exc}", type="HookFailed",
                                   non_retryable=True) from exc  # fmt: skip
        data.clear()
        data.update(state_from_json(new))

    def _continue_as_new(self, run: Any, agent: Any) -> None:
        from handrail.temporal._snapshots import snapshot_at_model

        snap = snapshot_at_model(run, agent, workflow.now())
        decided = dict(list(self._decided.items())[-_KEEP_DECIDED:])
        answered = dict(list(self._answered.items())[-_KEEP_DECIDED:])
        nxt = RunInput(self._inp.agent, [], {}, self._inp.initiator, self._inp.options, snap.to_dict(), decided,
                       self._inp.continued + 1, dict(self._usage), answered)  # fmt: skip
        workflow.continue_as_new(nxt)

    # -- tool calls ---------------------------------------------------------------------------------------------

    async def _run_tools(self, run: Any, effect: RunTools) -> list[ToolOutcome]:
        invocations = run.context.bind(effect.calls)
        gate = asyncio.Semaphore(effect.max_workers)

        async def one(inv: Any, item: Any) -> ToolOutcome:
            async with gate:
                return await self._tool(inv, item)

        outcomes = await asyncio.gather(*(one(inv, item) for inv, item in zip(invocations, effect.calls, strict=True)))
        return list(outcomes)

    async def _tool(self, inv: Any, item: Any) -> ToolOutcome:
        opts = self._inp.options
        call_id = item.call_id or ""
        injected = {k: encode_value(v, f"injected[{k!r}]") for k, v in inv.injected.items()}
        inp = ToolInput(self._inp.agent, workflow.info().workflow_id, call_id, item.tool_name, dict(item.arguments),
                        injected, item.key, False, opts.unknown_outcome)  # fmt: skip
        retry = RetryPolicy(initial_interval=timedelta(milliseconds=100), backoff_coefficient=2.0,
                            maximum_interval=timedelta(seconds=5), maximum_attempts=20,
                            non_retryable_error_types=["UnknownAgentError", "RunError"])  # fmt: skip
        while True:
            try:
                data = await workflow.execute_activity(
                    "handrail.run_tool", inp, start_to_close_timeout=timedelta(seconds=opts.tool_timeout_seconds),
                    heartbeat_timeout=timedelta(seconds=opts.heartbeat_seconds), retry_policy=retry,
                )  # fmt: skip
            except ActivityError as exc:
                return ToolOutcome(call_id, False, None, f"The tool call could not be completed: {exc.cause or exc}")
            self._usage["tool_calls"] += 1
            if data.get("type") != UNKNOWN_OUTCOME:
                outcome = from_json(data)
                assert isinstance(outcome, ToolOutcome)
                return outcome
            if opts.unknown_outcome == "fail":
                return ToolOutcome(
                    call_id, False, None, _UNKNOWN_TEXT.format(tool=item.tool_name) + " It was not run again."
                )
            # "retry" reaches here only for a tool that is not idempotent (the activity runs one that is again): ask
            again = await self._ask_again(inv, item)
            if not again.execute:
                return ToolOutcome(call_id, False, None, _UNKNOWN_TEXT.format(tool=item.tool_name) +
                                   f" {again.decided_by} chose not to run it again.")  # fmt: skip
            inp.again = True

    # -- approvals ----------------------------------------------------------------------------------------------

    async def _ask(self, run: Any, agent: Any, effect: AskApproval) -> list[ToolExecutionDecision]:
        invocations = run.context.bind(effect.calls)
        decisions: list[ToolExecutionDecision | None] = []
        held: list[Waiting] = []
        for inv in invocations:
            wrapper = find_strategy(agent.confirmation_strategies, inv.tool.name, inv.tool)
            original = getattr(wrapper, "original", wrapper)
            params = {**inv.arguments, **inv.injected}
            if not pause_needed(original, inv.tool.name, inv.tool.description, params):
                decisions.append(ToolExecutionDecision(inv.tool.name, True, inv.call.id, decided_by="policy"))
                continue
            waiting = self._waiting_for(inv, original, params)
            held.append(waiting)
            decisions.append(None)
        if held:
            await self._wait(held)
        by_id = {w.call_id: w.decision for w in held}
        out = [d if d is not None else by_id[inv.call.id] for d, inv in zip(decisions, invocations, strict=True)]
        return [d for d in out if d is not None]

    def _waiting_for(self, inv: Any, original: Any, params: dict[str, Any], kind: str = "approval") -> Waiting:
        settings = approval_settings(original)
        now = workflow.now()
        allowed = settings.allowed_decisions if kind == "approval" else ("approve", "reject")
        waiting = Waiting(
            call_id=inv.call.id or "", tool_name=inv.tool.name, arguments=params, injected=dict(inv.injected),
            allowed=tuple(allowed), quorum=team_policy(original, params).quorum if kind == "approval" else 1,
            initiator_may_approve=settings.initiator_may_approve, created_at=now,
            expires_at=expires(now, settings.expires_after), on_expiry=settings.on_expiry,
            description=settings.description, validate=_validator(inv), kind=kind,
            quorum_for=(lambda p: team_policy(original, p).quorum) if kind == "approval" else None,
        )  # fmt: skip
        self._waiting[waiting.call_id] = waiting
        self._usage["approvals"] += 1
        waiting.asked = self._usage["approvals"]  # numbers every question of the run's chain, deterministically
        return waiting

    async def _wait(self, held: list[Waiting]) -> None:
        self._status = "waiting"
        step = max(self._usage["model_calls"] - 1, 0)
        recording = _records.open_records(self._inp, held, step, self._usage["approvals"])  # the service's records
        while any(w.final is None for w in held):
            deadlines = [w.expires_at for w in held if w.final is None and w.expires_at is not None]
            timeout = (min(deadlines) - workflow.now()).total_seconds() if deadlines else None
            try:
                await workflow.wait_condition(lambda: all(w.final is not None for w in held),
                                              timeout=max(timeout, 0.001) if timeout is not None else None)  # fmt: skip
            except TimeoutError:
                now = workflow.now()
                for w in held:
                    if w.final is None and w.expires_at is not None and w.expires_at <= now:
                        w.expire()
        await _records.close_records(recording, held)
        for w in held:
            assert w.final is not None
            self._decided[w.call_id] = self._answered[str(w.asked)] = digest(w.final)
            del self._waiting[w.call_id]
        self._status = "running"

    async def _ask_again(self, inv: Any, item: Any) -> ToolExecutionDecision:
        from handrail.human_in_the_loop.policies import AlwaysAskPolicy

        class _Again:  # an unknown outcome is always asked, whatever the tool's policy
            confirmation_policy = AlwaysAskPolicy()
            description = (
                _UNKNOWN_TEXT.format(tool=item.tool_name) + " Approve to run it again, reject to report it failed."
            )

        waiting = self._waiting_for(inv, _Again(), {**inv.arguments, **inv.injected}, kind="unknown_outcome")
        self._decided.pop(waiting.call_id, None)
        await self._wait([waiting])
        assert waiting.decision is not None
        return waiting.decision

    @workflow.update(name="decide")
    async def decide(self, d: DecisionInput) -> dict[str, Any]:
        """Decide a held call: ``approve``, ``reject`` or ``edit`` (with the new arguments)."""
        waiting = self._waiting.get(d.call_id)
        if d.asked is not None and (waiting is None or waiting.asked != d.asked):
            if str(d.asked) in self._answered:  # a repeat of the decision that answered that question
                return {"status": "duplicate", "call_id": d.call_id}
            waiting = await self._asked(d.call_id, d.asked)
        elif waiting is None:
            if d.call_id in self._decided:  # a duplicate of a decision taken earlier (the validator let only that in)
                return {"status": "duplicate", "call_id": d.call_id}
            waiting = await self._asked(d.call_id, None)
        outcome = waiting.apply(d)
        return {"status": outcome, "call_id": d.call_id, "votes": sorted(waiting.votes), "quorum": waiting.quorum}

    async def _asked(self, call_id: str, asked: int | None) -> Waiting:
        """The question a decision answers, once it is asked.

        The validator accepted the decision while its question waited. Replaying the history, the SDK may hand an
        Update over before the activity result that made the run ask that question again (an unknown outcome), so
        the decision waits for its question here instead of being lost or taken for a duplicate.
        """

        def found() -> bool:
            w = self._waiting.get(call_id)
            return w is not None and w.final is None and (asked is None or w.asked == asked)

        await workflow.wait_condition(found)
        return self._waiting[call_id]

    @decide.validator
    def _check_decision(self, d: DecisionInput) -> None:
        waiting = self._waiting.get(d.call_id) if isinstance(d.call_id, str) else None
        if d.asked is not None and (type(d.asked) is not int or waiting is None or waiting.asked != d.asked):
            if type(d.asked) is not int:
                raise ValueError(f"asked must be the question's number (an int), got {d.asked!r:.40}")
            known = self._answered.get(str(d.asked))
            if known is not None:
                if known == digest(d):
                    return
                raise ValueError(f"question {d.asked} on call {d.call_id!r:.80} was already decided; a different "
                                 "decision is refused")  # fmt: skip
            now = waiting.asked if waiting is not None else "none"
            raise ValueError(
                f"question {d.asked} on call {d.call_id!r:.80} does not wait (the call's question now: {now})"
            )
        if waiting is None:
            if d.call_id in self._decided:
                if self._decided[d.call_id] == digest(d):
                    return
                raise ValueError(f"call {d.call_id!r} was already decided; a different decision is refused")
            waits = sorted(self._waiting) or "none"
            raise ValueError(f"no call {d.call_id!r:.80} waits for a decision in this run (waiting: {waits})")
        problem = waiting.refusal(d, self._inp.initiator)
        if problem is not None:
            raise ValueError(problem)

    @workflow.query(name="status")
    def status(self) -> dict[str, Any]:
        """The run as it is: running / waiting / done / failed, and the calls that wait for a decision."""
        return {
            "run_id": workflow.info().workflow_id, "agent": self._inp.agent, "status": self._status,
            "initiator": self._inp.initiator, "waiting": [w.view() for w in self._waiting.values() if w.final is None],
            "usage": dict(self._usage), "continued": self._inp.continued, "exit_reason": self._exit_reason,
        }  # fmt: skip


_UNKNOWN_TEXT = ("The outcome of this call to {tool!r} is unknown: the worker running it stopped while it ran, so "
                 "its effect may or may not have happened.")  # fmt: skip


class _EncodedMessages:
    """The JSON text of each message, computed once per message object (a model call sends the whole history)."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[ChatMessage, str]] = {}

    def text(self, messages: list[ChatMessage]) -> str:
        """The JSON text of ``messages`` (a list of ``to_dict()``)."""
        by_id = self._by_id
        parts = []
        for m in messages:
            known = by_id.get(id(m))
            if known is None or known[0] is not m:
                known = by_id[id(m)] = (m, json.dumps(m.to_dict(), separators=(",", ":")))
            parts.append(known[1])
        if len(by_id) > 2 * len(messages) + 64:  # messages a hook replaced: forget them
            live = {id(m) for m in messages}
            self._by_id = {k: v for k, v in by_id.items() if k in live}
        return "[" + ",".join(parts) + "]"


def _decode(value: Any, key: str) -> Any:
    from handrail.core._typed_json import decode_value

    return decode_value(value, f"state[{key!r}]")
