"""Chat generators (model backends) and the protocols a model backend satisfies.

:class:`ChatGenerator` is what ``Agent(chat_generator=...)`` takes; :class:`AsyncChatGenerator` adds the
``run_async`` that async runs prefer. The built-in generators live in :mod:`handrail.components.generators.chat`.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

__all__ = ["AsyncChatGenerator", "ChatGenerator", "accepts_tool_result_images"]

_EXPORTS = {
    "AsyncChatGenerator": "handrail.components.generators.types",
    "ChatGenerator": "handrail.components.generators.types",
    "accepts_tool_result_images": "handrail.components.generators.types",
}

if _typing.TYPE_CHECKING:
    from handrail.components.generators.types import AsyncChatGenerator, ChatGenerator, accepts_tool_result_images

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
