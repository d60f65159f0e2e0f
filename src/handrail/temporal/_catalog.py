"""The agents a Temporal worker runs, by name: built once per worker process, checked for what a workflow needs.

A workflow names its agent (``RunInput.agent``); every worker of the task queue must know that name. The worker
process keeps two views of each agent:

* the agent itself, which the activities use: its chat generator (model calls), its tools (tool calls) and its
  hooks, warmed up once;
* its *workflow twin*: the same agent with each confirmation strategy replaced by a marker that never asks
  anybody (:class:`AskInWorkflow`). The step machine runs on the twin inside the workflow; when a call needs a
  decision it yields ``AskApproval`` and the workflow answers it from Updates, reading the original strategy's
  policy and settings (``allowed_decisions``, ``expires_after``, ``on_expiry``, quorum...).

Refused when the catalog is made (a :class:`~handrail.errors.ConfigurationError` naming the agent): chat or memory
stores (a Temporal run keeps its conversation in the workflow), a tool that takes the whole ``State`` (its
changes could not travel back from the activity), a streaming callback.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, ConfigurationTypeError, RunError, UnknownAgentError
from handrail.tools.utils import flatten_tools

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.tools.tool import Tool

__all__ = ["AgentCatalog", "AskInWorkflow"]


class AskInWorkflow:
    """Stands for a confirmation strategy inside a workflow: the workflow asks (Updates), never this object."""

    pauses_run = False

    def __init__(self, original: Any) -> None:
        self.original = original

    def run(self, **_: Any) -> Any:
        raise RunError("A Temporal workflow decides calls through Updates; its strategy is never run directly.")

    async def run_async(self, **kwargs: Any) -> Any:
        return self.run(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        raise RunError("A workflow twin's strategy is not serialized; serialize the agent the worker was given.")

    def __repr__(self) -> str:
        return f"AskInWorkflow({type(self.original).__name__})"


class AgentCatalog:
    """Agents by name: ``{name: Agent or a no-argument factory}``; factories are called once, on first use.

    Raises:
        ConfigurationTypeError: ``agents`` is not a mapping of names to agents or factories.
    """

    def __init__(self, agents: Mapping[str, Agent | Callable[[], Agent]]) -> None:
        from handrail.components.agents.agent import Agent

        if not isinstance(agents, Mapping) or not agents:
            raise ConfigurationTypeError("A Temporal worker needs agents={name: Agent or factory}, at least one.")
        for name, value in agents.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigurationTypeError(f"An agent's name must be a non-empty str, got {name!r:.80}.")
            if not (isinstance(value, Agent) or callable(value)):
                raise ConfigurationTypeError(f"agents[{name!r}] must be an Agent or a factory returning one.")
        self._given = dict(agents)
        self._built: dict[str, tuple[Agent, Agent, dict[str, Tool]]] = {}
        self._warm: set[str] = set()
        self._lock = threading.RLock()

    @property
    def names(self) -> list[str]:
        """The agent names this catalog knows."""
        return sorted(self._given)

    def _entry(self, name: str) -> tuple[Agent, Agent, dict[str, Tool]]:
        from handrail.components.agents.agent import Agent

        with self._lock:
            found = self._built.get(name)
            if found is not None:
                return found
            if name not in self._given:
                raise UnknownAgentError(f"This worker has no agent named {name!r} (it has: {self.names}).")
            given = self._given[name]
            try:
                agent = given if isinstance(given, Agent) else given()
            except Exception as exc:
                raise ConfigurationError(f"The factory of agent {name!r} raised {type(exc).__name__}: {exc}") from exc
            if not isinstance(agent, Agent):
                raise ConfigurationTypeError(
                    f"The factory of agent {name!r} returned {type(agent).__name__}, not an Agent."
                )
            tools = {t.name: t for t in flatten_tools(agent.tools)}
            check_for_temporal(name, agent, tools)
            twin = copy.copy(agent)
            strategies = agent.confirmation_strategies
            twin.confirmation_strategies = {k: AskInWorkflow(s) for k, s in strategies.items()} if strategies else None
            twin.observers = []
            self._built[name] = (agent, twin, tools)
            return self._built[name]

    def check_all(self) -> None:
        """Build and check every agent now (a worker does this before it takes work)."""
        for name in self.names:
            self._entry(name)

    def agent(self, name: str) -> Agent:
        """The agent named ``name`` (for activities), warmed up once."""
        agent = self._entry(name)[0]
        if name not in self._warm:
            with self._lock:
                if name not in self._warm:
                    agent.warm_up()
                    self._warm.add(name)
        return agent

    def twin(self, name: str) -> Agent:
        """The workflow twin of the agent named ``name`` (never warmed up, never executes an effect)."""
        return self._entry(name)[1]

    def tool(self, name: str, tool_name: str) -> Tool:
        """The tool ``tool_name`` of agent ``name``.

        Raises:
            RunError: The agent has no such tool (the worker's agent differs from the one that started the run).
        """
        tools = self._entry(name)[2]
        found = tools.get(tool_name)
        if found is None:
            raise RunError(f"Agent {name!r} on this worker has no tool {tool_name!r} (its tools: {sorted(tools)}).")
        return found

    def close(self) -> None:
        """Close every agent built (its generator, tools and hooks)."""
        with self._lock:
            for agent, _, _ in self._built.values():
                agent.close()


def check_for_temporal(name: str, agent: Agent, tools: Mapping[str, Tool]) -> None:
    """Refuse what a workflow-run agent cannot do, naming the agent and the part."""
    if agent.chat_message_store is not None or agent.memory_store is not None:
        raise ConfigurationError(f"Agent {name!r}: chat and memory stores are not supported on Temporal (the workflow "
                                 "keeps the conversation); remove chat_message_store / memory_store.")  # fmt: skip
    if agent.streaming_callback is not None:
        raise ConfigurationError(f"Agent {name!r}: a streaming callback cannot run in a workflow; remove it.")
    for tool in tools.values():
        if tool.roles.state_param is not None:
            raise ConfigurationError(f"Agent {name!r}: tool {tool.name!r} takes the whole State, which cannot travel "
                                     "to a Temporal activity and back; give it inputs_from_state / outputs_to_state "
                                     "instead.")  # fmt: skip
