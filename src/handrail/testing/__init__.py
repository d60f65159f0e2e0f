"""Public test helpers: fake chat models (scripted, or computed by a function) and message builders.

Store conformance suites are in :mod:`handrail.testing.store_suites`.
"""

from handrail.testing.builders import call, reply, tool_reply, user
from handrail.testing.function_generator import FunctionChatGenerator
from handrail.testing.scripted import ScriptedChatGenerator

__all__ = ["FunctionChatGenerator", "ScriptedChatGenerator", "call", "reply", "tool_reply", "user"]
