from __future__ import annotations

import importlib

import pytest

MODULES = [
    "handrail.dataclasses",
    "handrail.dataclasses.chat_message",
    "handrail.dataclasses.streaming",
    "handrail.dataclasses.state",
    "handrail.core",
    "handrail.core.serialization",
    "handrail.errors",
]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_are_unique(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported))
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == []


def test_dataclasses_package_exports_the_message_and_streaming_types() -> None:
    import handrail.dataclasses as dc

    for name in [
        "ChatMessage",
        "ChatRole",
        "TextContent",
        "ToolCall",
        "ToolCallResult",
        "StreamingChunk",
        "ToolCallDelta",
        "ChunkAssembler",
        "State",
        "assemble_chunks",
    ]:
        assert name in dc.__all__
