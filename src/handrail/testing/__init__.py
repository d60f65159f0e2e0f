"""Public test helpers: a scripted fake chat model (store conformance suites come later)."""

from handrail.testing.scripted import ScriptedChatGenerator

__all__ = ["ScriptedChatGenerator"]
