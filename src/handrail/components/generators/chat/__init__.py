"""Chat generators: the embedded local model and OpenAI-compatible servers.

Each generator is imported on first use, so its optional dependency (``xllamacpp``,
``openai``) is only needed when it is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["LlamaCppChatGenerator", "OpenAIChatGenerator"]

_EXPORTS = {
    "LlamaCppChatGenerator": "handrail.components.generators.chat.llama_cpp",
    "OpenAIChatGenerator": "handrail.components.generators.chat.openai",
}

if TYPE_CHECKING:
    from handrail.components.generators.chat.llama_cpp import LlamaCppChatGenerator
    from handrail.components.generators.chat.openai import OpenAIChatGenerator


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
