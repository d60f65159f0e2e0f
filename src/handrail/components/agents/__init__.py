"""The Agent, its State, and one run of it as a state machine (``Agent.start``)."""

from handrail.components.agents.agent import Agent
from handrail.components.agents.run import AgentRun
from handrail.dataclasses.state import State

__all__ = ["Agent", "AgentRun", "State"]
