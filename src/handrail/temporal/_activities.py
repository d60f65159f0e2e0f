"""The activities of a handrail workflow: the model call, one tool call, the hooks of a point.

Each runs in a worker process on the agent of the worker's catalog (:mod:`handrail.temporal._catalog`), never on
anything the workflow holds but data. A tool call goes through the ledger (:mod:`handrail.temporal._store`) so its
effect happens at most once per call however often Temporal runs the activity; it heartbeats while the tool runs,
so a dead worker's call is noticed within ``heartbeat_seconds`` and its outcome judged by the ledger.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from handrail.components.drivers import notify_ended, notify_started
from handrail.components.effects import CallModel, RunHooks, ToolInvocation, ToolOutcome, to_json
from handrail.core._typed_json import decode_value, encode_value
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.state import State
from handrail.temporal._types import HookInput, ModelInput, ToolInput

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.drivers import RunObserver
    from handrail.temporal._catalog import AgentCatalog
    from handrail.temporal._store import TemporalStore
    from handrail.tools.tool import Tool

__all__ = ["Activities", "UNKNOWN_OUTCOME", "is_idempotent", "state_from_json", "state_to_json"]

T = TypeVar("T")
UNKNOWN_OUTCOME = "unknown_outcome"
"""The ``type`` of a tool activity's answer when an earlier attempt started the tool and died: nobody knows whether
its effect happened."""


def is_idempotent(tool: Tool) -> bool:
    """Whether running ``tool`` twice for one call is safe: marked ``idempotent``, or it takes a ``ToolCallId``."""
    return tool.idempotent or tool.roles.call_id_param is not None


def state_to_json(data: dict[str, Any]) -> dict[str, Any]:
    """A State's data as JSON: messages as dicts, the other values as typed JSON."""
    out: dict[str, Any] = {"messages": [m.to_dict() for m in data["messages"]]}
    for key, value in data.items():
        if key != "messages":
            out[key] = encode_value(value, f"state[{key!r}]")
    return out


def state_from_json(data: dict[str, Any]) -> dict[str, Any]:
    """What :func:`state_to_json` wrote."""
    out: dict[str, Any] = {"messages": [ChatMessage.from_dict(m) for m in data["messages"]]}
    for key, value in data.items():
        if key != "messages":
            out[key] = decode_value(value, f"state[{key!r}]")
    return out


async def _in_thread(executor: concurrent.futures.Executor | None, function: Callable[..., T], *args: Any,
                     **kwargs: Any) -> T:  # fmt: skip
    """``asyncio.to_thread`` on ``executor`` (the activity's context goes along: ``activity.info()`` works there)."""
    call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(executor, call)


async def _heartbeating(function: Callable[[], T], executor: concurrent.futures.Executor | None = None) -> T:
    """Run ``function`` in a thread of ``executor``, heartbeating while it runs (a no-op in a local activity).

    It beats four times per heartbeat timeout (at most every 5 s), so a busy machine that delays one beat does not
    make Temporal declare a live worker dead (``create_worker`` lowers the SDK's throttle to match: by default it
    sends a beat only every 0.8 × the timeout, 0.2 s of slack for a 1 s timeout).
    """
    task = asyncio.ensure_future(_in_thread(executor, function))
    info = activity.info()
    remote = not info.is_local
    timeout = info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else 2.0
    every = min(max(timeout / 4, 0.1), 5.0)
    while True:
        done, _ = await asyncio.wait({task}, timeout=every)
        if done:
            return task.result()
        if remote:
            activity.heartbeat()


class Activities:
    """The activities of one worker: its agents and its ledger.

    ``executor`` runs the blocking parts (the model, the tool, the ledger): give it a thread per call the worker
    runs at once. None is asyncio's default executor, whose ``min(32, cpus + 4)`` threads (6 on 2 cores) would
    cap a worker's concurrent tool calls far below ``max_concurrent_activities``, and make a tool call wait for
    a thread with its ledger row already ``running``.

    With ``tracing``, each model call, tool call and hook point is traced as a run's effect is (``chat``,
    ``execute_tool``, ``hook`` spans under the activity's span) to ``tracer_provider`` (None: the global one).
    """

    def __init__(self, catalog: AgentCatalog, store: TemporalStore, executor: concurrent.futures.Executor | None = None,
                 *, tracing: bool = False, tracer_provider: Any = None) -> None:  # fmt: skip
        self.catalog = catalog
        self.store = store
        self.executor = executor
        self.tracing = tracing
        self.tracer_provider = tracer_provider

    def _observers(self, name: str, agent: Agent, step: int = 1) -> list[RunObserver]:
        """The observers of one effect of agent ``name`` (none without tracing), under the current span."""
        if not self.tracing:
            return []
        from handrail.temporal._tracing import effect_observers

        def describe(tool_name: str) -> str | None:  # as RunInfo.describe_tool: None for a tool it cannot tell
            try:
                return self.catalog.tool(name, tool_name).description or None
            except Exception:
                return None

        return effect_observers(self.tracer_provider, agent, step, describe)

    def all(self) -> list[Callable[..., Any]]:
        """The activity functions to register on the worker."""
        return [self.call_model, self.run_tool, self.run_hooks]

    @activity.defn(name="handrail.call_model")
    async def call_model(self, inp: ModelInput) -> list[dict[str, Any]]:
        """Call the agent's chat generator; returns its replies as dicts."""
        from handrail.components.agents._context import _replies
        from handrail.components.agents._plan import model_call

        def call() -> list[dict[str, Any]]:
            agent = self.catalog.agent(inp.agent)
            model = model_call(agent, None, None)
            messages = [ChatMessage.from_dict(m) for m in json.loads(inp.messages)]
            observers = self._observers(inp.agent, agent, inp.step)
            effect = CallModel(messages, tuple(inp.tools))
            began = notify_started(observers, effect)
            try:
                if model.pass_tools:
                    tools = [self.catalog.tool(inp.agent, n) for n in inp.tools] or None
                    output = agent.chat_generator.run(messages=messages, tools=tools)
                else:
                    output = agent.chat_generator.run(messages=messages)
                replies = _replies(output, agent.chat_generator)
                if not isinstance(replies, list) or not all(isinstance(r, ChatMessage) for r in replies):
                    raise ApplicationError(f"{type(agent.chat_generator).__name__} returned replies that are not a "
                                           f"list of ChatMessage: {replies!r:.200}", type="BadReplies",
                                           non_retryable=True)  # fmt: skip
            except BaseException as exc:
                notify_ended(observers, effect, began, error=exc)
                raise
            notify_ended(observers, effect, began, replies)
            return [r.to_dict() for r in replies]

        return await _heartbeating(call, self.executor)

    @activity.defn(name="handrail.run_tool")
    async def run_tool(self, inp: ToolInput) -> dict[str, Any]:
        """Run one approved tool call through the ledger; returns its outcome (``to_json`` of a ToolOutcome).

        When an earlier attempt started the tool and its worker died, the answer is ``{"type":
        "unknown_outcome", ...}`` instead (the tool is not run again), unless ``again`` is set (honoured on the
        activity's first attempt only) or the tool is idempotent and the run's policy is ``retry``.
        """
        key = f"{inp.run_id}/{inp.call_id}"
        tool = self.catalog.tool(inp.agent, inp.tool_name)
        # ``again`` is a person's choice to run the call once more: only this activity's first attempt may act on
        # it. A later attempt means that run died too; its outcome is unknown again and must be asked again.
        again = inp.again and activity.info().attempt == 1
        row = await _in_thread(self.executor, self.store.begin, key, again=again)
        if row is not None and row.status == "done":
            assert row.outcome is not None
            return row.outcome  # the effect happened; only the activity's completion was lost
        if row is not None:
            if not (inp.unknown_outcome == "retry" and is_idempotent(tool)):
                return {"type": UNKNOWN_OUTCOME, "call_id": inp.call_id, "attempts": row.attempts}
            await _in_thread(self.executor, self.store.begin, key, again=True)
        kwargs = {**inp.arguments, **{k: decode_value(v, f"injected[{k!r}]") for k, v in inp.injected.items()}}
        if tool.roles.call_id_param is not None:
            kwargs[tool.roles.call_id_param] = inp.key or inp.call_id

        def call() -> dict[str, Any]:
            return _call(tool, inp, kwargs, self._observers(inp.agent, self.catalog.agent(inp.agent)))

        outcome = await _heartbeating(call, self.executor)
        await _in_thread(self.executor, self.store.done, key, outcome)
        return outcome

    @activity.defn(name="handrail.run_hooks")
    async def run_hooks(self, inp: HookInput) -> dict[str, Any]:
        """Run the agent's hooks of one point on the State sent; returns the State as they left it."""
        from handrail.components.agents._hook_checks import check_after_hook

        def run() -> dict[str, Any]:
            agent = self.catalog.agent(inp.agent)
            state = State(agent.state_schema or {})
            state.data.update(state_from_json(inp.state))
            observers = self._observers(inp.agent, agent)
            effect = RunHooks(inp.point)  # type: ignore[arg-type]  # a point the workflow's run named
            began = notify_started(observers, effect)
            try:
                for hook in (agent.hooks or {}).get(inp.point, ()):
                    hook.run(state)
                    check_after_hook(hook, inp.point, state.data)
            except BaseException as exc:
                notify_ended(observers, effect, began, error=exc)
                raise
            notify_ended(observers, effect, began)
            return state_to_json(state.data)

        return await _heartbeating(run, self.executor)


def _call(tool: Tool, inp: ToolInput, kwargs: dict[str, Any], observers: list[RunObserver]) -> dict[str, Any]:
    from handrail.components.tools._effects import Invocation
    from handrail.components.tools._execution import _call_sync
    from handrail.components.tools._results import describe_exception

    call = ToolCall(tool_name=inp.tool_name, arguments=inp.arguments, id=inp.call_id)
    event = ToolInvocation(inp.call_id or None, inp.tool_name, dict(inp.arguments), inp.key or inp.call_id)
    began = notify_started(observers, event)
    ok, value = _call_sync(Invocation(call, tool, kwargs, inp.arguments, {}, inp.key))
    notify_ended(observers, event, began, value if ok else None, None if ok else value)
    outcome = (
        ToolOutcome(inp.call_id, True, value)
        if ok
        else ToolOutcome(inp.call_id, False, None, describe_exception(value))
    )
    try:
        data = to_json(outcome)
    except Exception:  # a result the typed JSON cannot hold: its text, as a local run gives the model
        data = to_json(ToolOutcome(inp.call_id, True, str(outcome.value)))
    assert data is not None
    return data
