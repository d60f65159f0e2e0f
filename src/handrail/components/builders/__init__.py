"""Builders: components that render Jinja2 templates into prompts (a string, or a list of ChatMessage)."""

from handrail.components.builders.chat_prompt_builder import ChatPromptBuilder
from handrail.components.builders.prompt_builder import PromptBuilder

__all__ = ["ChatPromptBuilder", "PromptBuilder"]
