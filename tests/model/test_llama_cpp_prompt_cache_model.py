"""The prompt cache against the real runtime and the small model (slow; marked ``model``).

Each test loads its own generators (the session fixtures share one cache directory with the user's),
with the cache in a temporary directory. What the runtime evaluated is read from the ``timings`` of
its last stream chunk: ``cache_n`` tokens reused, ``prompt_n`` evaluated.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.components.generators.chat._gguf_parts import default_cache_dir
from handrail.components.generators.chat._prompt_cache import CachedServer
from handrail.dataclasses import ChatMessage
from tests.model._agent_tools import CALCULATOR

pytestmark = pytest.mark.model

SYSTEM = ChatMessage.from_system("You are a careful assistant. Use the calculator for any arithmetic.")


class _Timings:
    """Stands between a CachedServer and the runtime and keeps each request's timings."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.seen: list[dict[str, Any]] = []

    def handle_chat_completions(self, body: dict[str, Any], callback: Any) -> None:
        timings: dict[str, Any] = {}

        def keep(chunk: Any) -> bool:
            if isinstance(chunk, dict) and chunk.get("timings"):
                timings.update(chunk["timings"])
            return bool(callback(chunk))

        self.server.handle_chat_completions(body, keep)
        self.seen.append(timings)


def _loaded(cache: Path | bool) -> tuple[LlamaCppChatGenerator, CachedServer | None, _Timings]:
    generator = LlamaCppChatGenerator(model="small", prompt_cache=cache if isinstance(cache, bool) else str(cache))
    try:
        generator.warm_up()
    except Exception as exc:  # the runtime or the small model's parts are missing
        if os.environ.get("HANDRAIL_REQUIRE_MODEL") == "1":
            raise
        pytest.skip(f"the small model cannot load: {exc}")
    server = generator._server
    cached = server if isinstance(server, CachedServer) else None
    timings = _Timings(cached.server if cached else server)
    if cached is not None:
        cached.server = timings
    else:
        generator._server = timings
    return generator, cached, timings


def _ask(generator: LlamaCppChatGenerator, question: str = "Compute 17 * 23.") -> ChatMessage:
    messages = [SYSTEM, ChatMessage.from_user(question)]
    reply: ChatMessage = generator.run(messages, tools=[CALCULATOR])["replies"][0]
    return reply


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "prompt-cache"


def test_the_prefix_is_saved_then_restored_by_the_next_generator(cache: Path) -> None:
    first, cached, timings = _loaded(cache)
    try:
        reply = _ask(first)
    finally:
        first.close()
    assert cached is not None and cached.last_event == "saved"
    assert reply.tool_calls and reply.tool_calls[0].tool_name == "calculator"
    files = sorted(p.name for p in cache.iterdir())
    assert len(files) == 2 and files[0].endswith(".bin") and files[1].endswith(".json")
    assert {stat.S_IMODE(p.stat().st_mode) for p in cache.iterdir()} == {0o600}
    cold = timings.seen[-1]  # the request after the prefix: reuses it from memory
    prefix_tokens = timings.seen[0]["prompt_n"]

    second, cached, timings = _loaded(cache)
    try:
        again = _ask(second, "Compute 19 * 29.")
    finally:
        second.close()
    assert cached is not None and cached.last_event == "restored"
    assert len(timings.seen) == 1  # no prefix request
    warm = timings.seen[0]
    assert warm["cache_n"] >= prefix_tokens - 4  # all but the prefix request's reply prompt
    assert warm["prompt_n"] < prefix_tokens / 4
    assert cold["cache_n"] == warm["cache_n"]
    assert again.tool_calls and again.tool_calls[0].tool_name == "calculator"


def test_a_corrupt_state_file_is_ignored(cache: Path) -> None:
    first, _, _ = _loaded(cache)
    try:
        _ask(first)
    finally:
        first.close()
    (state,) = cache.glob("*.bin")
    (sidecar,) = cache.glob("*.json")
    # Garbage that its sidecar vouches for: only the runtime can tell, and it must refuse it harmlessly.
    state.write_bytes(b"\x00junk" * 1000)
    from handrail.components.generators.chat import _prompt_cache

    sidecar.write_text(
        f'{{"format": {_prompt_cache.FORMAT}, "size": {state.stat().st_size}, '
        f'"sha256": "{_prompt_cache._sha256_of(state)}", "tokens": 5}}'
    )
    second, cached, timings = _loaded(cache)
    try:
        reply = _ask(second)
    finally:
        second.close()
    assert cached is not None and cached.last_event == "saved"  # evaluated and saved again
    assert reply.tool_calls and reply.tool_calls[0].tool_name == "calculator"
    assert timings.seen[0]["cache_n"] == 0
    assert state.stat().st_size > 5000


def test_prompt_cache_false_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "xdg"
    (home / "handrail").mkdir(parents=True)
    (home / "handrail" / "models").symlink_to(default_cache_dir())  # the installed model, a new cache home
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    generator, cached, timings = _loaded(False)
    try:
        _ask(generator)
    finally:
        generator.close()
    assert cached is None
    assert len(timings.seen) == 1 and timings.seen[0]["cache_n"] == 0
    assert sorted(p.name for p in (home / "handrail").iterdir()) == ["models"]
