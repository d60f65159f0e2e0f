"""The Agent and its State."""

from handrail.components.agents.agent import Agent
from handrail.dataclasses.state import State

__all__ = ["Agent", "State"]
