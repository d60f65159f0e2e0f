"""Chat generators: the embedded local model and OpenAI-compatible servers.

Each generator is imported on first use, so its optional dependency (``xllamacpp``,
``openai``) is only needed when it is used.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

__all__ = ["LlamaCppChatGenerator", "OpenAIChatGenerator"]

_EXPORTS = {
    "LlamaCppChatGenerator": "handrail.components.generators.chat.llama_cpp",
    "OpenAIChatGenerator": "handrail.components.generators.chat.openai",
}

if _typing.TYPE_CHECKING:
    from handrail.components.generators.chat.llama_cpp import LlamaCppChatGenerator
    from handrail.components.generators.chat.openai import OpenAIChatGenerator

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
