"""Fixtures that load the embedded models once per test session.

A model whose runtime or part packages are not installed makes its tests skip, unless
``HANDRAIL_REQUIRE_MODEL=1`` is set (CI sets it where it installs ``handrail[local-small]``), in
which case they fail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.errors import ModelFilesError


def _load(model: str) -> LlamaCppChatGenerator:
    required = os.environ.get("HANDRAIL_REQUIRE_MODEL") == "1"
    try:
        import xllamacpp  # noqa: F401 - only checks that the runtime is installed
    except ImportError:
        if required:
            raise
        pytest.skip("xllamacpp is not installed (pip install 'handrail[local-small]')")
    generator = LlamaCppChatGenerator(model=model)
    try:
        generator.warm_up()
    except ModelFilesError as exc:
        if required and model == "small":
            raise
        pytest.skip(f"model {model!r} is not installed: {exc}")
    return generator


@pytest.fixture(scope="session")
def small_generator() -> Iterator[LlamaCppChatGenerator]:
    """Qwen2.5-Coder-0.5B-Instruct (``handrail[local-small]``)."""
    generator = _load("small")
    yield generator
    generator.close()


@pytest.fixture(scope="session")
def default_generator() -> Iterator[LlamaCppChatGenerator]:
    """Qwen2.5-Coder-1.5B-Instruct (``handrail[local]``)."""
    generator = _load("default")
    yield generator
    generator.close()
