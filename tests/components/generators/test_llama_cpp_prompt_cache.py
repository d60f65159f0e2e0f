"""The prompt cache's keys, files and save/restore steps, with a fake server and slot client (no model needed).

The real runtime's save and restore are exercised by tests/model/test_llama_cpp_prompt_cache_model.py.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from handrail.components.generators.chat import LlamaCppChatGenerator
from handrail.components.generators.chat._llama_runtime import model_identity, start_server, stream_completion
from handrail.components.generators.chat._prompt_cache import (
    MAX_FILES,
    CachedServer,
    PromptCache,
    SlotClient,
    default_prompt_cache_dir,
    prefix_key,
)
from handrail.errors import ConfigurationError

LAYOUT: dict[str, Any] = {"runtime": "1.0", "model": "sha256:ab", "n_ctx": 4096, "kv": ["f16", "f16", "auto"]}
TOOLS = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
SYSTEM = {"role": "system", "content": "Use the tools."}


def _body(question: str = "What is 2 + 2?", system: dict[str, Any] | None = SYSTEM) -> dict[str, Any]:
    messages = ([system] if system else []) + [{"role": "user", "content": question}]
    return copy.deepcopy({"messages": messages, "tools": TOOLS, "stream": True})


# ----------------------------------------------------------------------------- keys


def test_the_key_depends_on_the_prefix_not_on_what_follows() -> None:
    key = prefix_key(LAYOUT, _body())
    assert key is not None and len(key) == 40
    assert prefix_key(LAYOUT, _body("Another question")) == key
    later = _body()
    later["messages"].append({"role": "assistant", "content": "4"})
    assert prefix_key(LAYOUT, later) == key


@pytest.mark.parametrize(
    "change",
    [
        lambda layout, body: layout.update(n_ctx=2048),
        lambda layout, body: layout.update(model="sha256:cd"),
        lambda layout, body: layout.update(runtime="1.1"),
        lambda layout, body: layout.update(kv=["q8_0", "q8_0", "auto"]),
        lambda layout, body: body["messages"][0].update(content="Be brief."),
        lambda layout, body: body.update(tools=[]),
        lambda layout, body: body["tools"][0]["function"].update(description="Arithmetic."),
    ],
)
def test_the_key_changes_with_the_layout_and_the_prefix(
    change: Callable[[dict[str, Any], dict[str, Any]], None],
) -> None:
    layout, body = copy.deepcopy(LAYOUT), _body()
    change(layout, body)
    assert prefix_key(layout, body) != prefix_key(LAYOUT, _body())


def test_a_request_without_a_system_message_has_no_key() -> None:
    assert prefix_key(LAYOUT, _body(system=None)) is None
    assert prefix_key(LAYOUT, {"messages": []}) is None


def test_model_identity_is_the_hash_or_the_file(tmp_path: Path) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF1")
    assert model_identity(path, "ab12") == "sha256:ab12"
    first = model_identity(path, None)
    assert first.startswith("file:") and str(path.resolve()) in first
    path.write_bytes(b"GGUF12")  # another size: another identity
    assert model_identity(path, None) != first


def test_the_default_directory_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_prompt_cache_dir() == tmp_path / "handrail" / "prompt-cache"


# ----------------------------------------------------------------------------- files


def _write_entry(cache: PromptCache, key: str, data: bytes = b"state") -> Path:
    temporary = cache.new_temporary(key)
    temporary.write_bytes(data)
    cache.commit(key, temporary, tokens=5)
    return cache.state_file(key)


def test_an_entry_is_private_and_usable(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path / "pc")
    assert not cache.usable("k")
    state = _write_entry(cache, "k")
    assert cache.usable("k")
    assert stat.S_IMODE((tmp_path / "pc").stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "pc").iterdir()} == {0o600}
    assert sorted(p.name for p in (tmp_path / "pc").iterdir()) == ["k.bin", "k.json"]
    assert json.loads((tmp_path / "pc" / "k.json").read_text())["size"] == state.stat().st_size


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: (d / "k.bin").write_bytes(b"stbte"),  # same size, other bytes
        lambda d: (d / "k.bin").write_bytes(b"st"),
        lambda d: (d / "k.json").write_text("{not json"),
        lambda d: (d / "k.json").write_text("[]"),
        lambda d: (d / "k.json").unlink(),
        lambda d: (d / "k.bin").unlink(),
    ],
)
def test_a_damaged_entry_is_deleted_not_used(tmp_path: Path, damage: Callable[[Path], Any]) -> None:
    cache = PromptCache(tmp_path)
    _write_entry(cache, "k")
    damage(tmp_path)
    assert not cache.usable("k")
    assert list(tmp_path.iterdir()) == []


def test_pruning_keeps_the_most_recently_used_entries(tmp_path: Path) -> None:
    cache = PromptCache(tmp_path)
    for i in range(MAX_FILES + 2):  # each commit prunes
        stamp = 2_000_000 if i == 0 else 1_000_000 + i  # k0 was used last
        os.utime(_write_entry(cache, f"k{i}"), (stamp, stamp))
    kept = sorted(p.stem for p in tmp_path.glob("*.bin"))
    assert len(kept) == MAX_FILES and "k0" in kept and "k1" not in kept
    assert len(list(tmp_path.glob("*.json"))) == MAX_FILES


# ----------------------------------------------------------------------------- save and restore


class FakeRuntimeServer:
    """Answers chat requests with one chunk and a usage chunk; counts the prompt as its messages' characters."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.held: int = 0
        """Tokens the slot holds after the last request."""

    def handle_chat_completions(self, body: dict[str, Any], callback: Callable[[Any], bool]) -> None:
        self.requests.append(copy.deepcopy(body))
        tokens = sum(len(str(m.get("content"))) for m in body["messages"])
        self.held = tokens
        if body.get("return_progress"):
            callback({"choices": [], "prompt_progress": {"total": tokens, "cache": 0, "processed": tokens}})
        chunk = {"choices": [{"index": 0, "delta": {"content": "{}"}, "finish_reason": "stop"}]}
        if callback(chunk):
            return
        callback({"choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": 1}})


class FakeSlots(SlotClient):
    """Writes and reads the state file as the runtime would (the held token count as text)."""

    def __init__(self, server: FakeRuntimeServer, directory: Path) -> None:
        self.server, self.directory = server, directory
        self.actions: list[tuple[str, str]] = []
        self.fail: str | None = None

    def action(self, action: str, filename: str) -> dict[str, Any]:
        self.actions.append((action, filename))
        if self.fail == action:
            raise RuntimeError(f"slot {action} answered 400: refused")
        path = self.directory / filename
        if action == "save":
            path.write_text(str(self.server.held))
            return {"n_saved": self.server.held}
        self.server.held = int(path.read_text())
        return {"n_restored": self.server.held}


def _cached(directory: Path) -> tuple[CachedServer, FakeRuntimeServer, FakeSlots]:
    server = FakeRuntimeServer()
    slots = FakeSlots(server, directory)
    return CachedServer(server, slots, PromptCache(directory), LAYOUT), server, slots


def _run(cached: CachedServer, body: dict[str, Any], cancel: threading.Event | None = None) -> str:
    return stream_completion(cached, body, lambda text: None, cancel or threading.Event()).text


def test_the_first_process_saves_the_prefix_and_the_next_restores_it(tmp_path: Path) -> None:
    first, server, slots = _cached(tmp_path)
    assert _run(first, _body()) == "{}"
    assert first.last_event == "saved"
    prefix_request, request = server.requests
    assert prefix_request["messages"] == [SYSTEM] and prefix_request["tools"] == TOOLS
    assert prefix_request["max_tokens"] == 1
    assert request == _body()
    assert [a for a, _ in slots.actions] == ["save"]
    assert len(list(tmp_path.glob("*.bin"))) == 1 and not list(tmp_path.glob("*.tmp"))

    _run(first, _body("Another one"))  # the same process: the slot already holds it
    assert first.last_event == "seen" and len(server.requests) == 3

    second, server2, slots2 = _cached(tmp_path)
    _run(second, _body("A third question"))
    assert second.last_event == "restored"
    assert [a for a, _ in slots2.actions] == ["restore"]
    assert len(server2.requests) == 1  # no prefix evaluation


def test_a_corrupt_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    first, _, _ = _cached(tmp_path)
    _run(first, _body())
    (state,) = tmp_path.glob("*.bin")
    state.write_text("9" * len(state.read_text()))
    second, server, slots = _cached(tmp_path)
    assert _run(second, _body()) == "{}"
    assert second.last_event == "saved"
    assert [a for a, _ in slots.actions] == ["save"]
    assert len(server.requests) == 2


def test_a_refused_restore_falls_back_to_evaluating(tmp_path: Path) -> None:
    first, _, _ = _cached(tmp_path)
    _run(first, _body())
    second, server, slots = _cached(tmp_path)
    slots.fail = "restore"
    assert _run(second, _body()) == "{}"
    assert [a for a, _ in slots.actions] == ["restore", "save"]
    assert second.last_event == "saved" and len(server.requests) == 2


def test_a_failing_save_leaves_nothing_and_the_request_runs(tmp_path: Path) -> None:
    cached, server, slots = _cached(tmp_path)
    slots.fail = "save"
    assert _run(cached, _body()) == "{}"
    assert cached.last_event == "skipped"
    assert list(tmp_path.iterdir()) == []
    assert len(server.requests) == 2


def test_a_state_that_is_not_the_prefix_is_not_kept(tmp_path: Path) -> None:
    cached, server, slots = _cached(tmp_path)
    original = slots.action

    def raced(action: str, filename: str) -> dict[str, Any]:
        server.held += 40  # another request ran between the prefix and the save
        return original(action, filename)

    slots.action = raced  # type: ignore[method-assign]
    _run(cached, _body())
    assert cached.last_event == "skipped" and list(tmp_path.iterdir()) == []


def test_a_cancel_during_the_prefix_saves_nothing_and_skips_the_request(tmp_path: Path) -> None:
    cached, server, _ = _cached(tmp_path)
    cancel = threading.Event()
    original = server.handle_chat_completions

    def cancelled(body: dict[str, Any], callback: Callable[[Any], bool]) -> None:
        cancel.set()
        original(body, callback)

    server.handle_chat_completions = cancelled  # type: ignore[method-assign]
    assert _run(cached, _body(), cancel) == ""
    assert len(server.requests) == 1 and list(tmp_path.iterdir()) == []


def test_the_prefix_evaluation_reports_its_progress_too(tmp_path: Path) -> None:
    cached, server, _ = _cached(tmp_path)
    seen: list[dict[str, Any]] = []
    stream_completion(cached, _body(), lambda text: None, threading.Event(), seen.append)
    prefix_tokens = len(SYSTEM["content"])
    assert [p["total"] for p in seen] == [prefix_tokens, prefix_tokens + len("What is 2 + 2?")]
    assert server.requests[0]["return_progress"] is True


def test_requests_without_a_system_message_are_not_cached(tmp_path: Path) -> None:
    cached, server, slots = _cached(tmp_path)
    _run(cached, _body(system=None))
    assert cached.last_event == "skipped" and slots.actions == [] and len(server.requests) == 1


def test_slot_client_refuses_an_address_without_a_port() -> None:
    with pytest.raises(ValueError, match="not a listener address"):
        SlotClient("http://127.0.0.1", "key")


# ----------------------------------------------------------------------------- the generator's option


class _Params:
    def __init__(self) -> None:
        self.model = type("M", (), {"path": ""})()
        self.cpuparams = type("C", (), {"n_threads": -1})()
        self.cpuparams_batch = type("C", (), {"n_threads": -1})()


class _ListeningServer:
    listening_address = "http://127.0.0.1:9"

    def __init__(self, params: _Params) -> None:
        self.params = params

    def handle_metrics(self) -> str:
        return ""


class _Runtime:
    CommonParams = _Params
    Server = _ListeningServer
    __version__ = "9.9"


def test_start_server_wraps_the_server_only_when_caching(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    plain = start_server(_Runtime, model, n_ctx=512, n_threads=1)
    assert isinstance(plain, _ListeningServer)
    params: Any = plain.params
    assert params.endpoint_slots is False and not hasattr(params, "slot_save_path")
    cached = start_server(_Runtime, model, n_ctx=512, n_threads=1, prompt_cache=tmp_path / "pc", model_id="sha256:x")
    assert isinstance(cached, CachedServer)
    assert cached.server.params.slot_save_path == f"{tmp_path / 'pc'}/"
    assert cached.layout["model"] == "sha256:x" and cached.layout["runtime"] == "9.9"
    assert not (tmp_path / "pc").exists()  # created on the first save only


def test_the_option_round_trips_and_bad_values_are_refused(tmp_path: Path) -> None:
    for value in (True, False, str(tmp_path)):
        generator = LlamaCppChatGenerator("small", prompt_cache=value)
        data = generator.to_dict()
        assert data["init_parameters"]["prompt_cache"] == value
        assert LlamaCppChatGenerator.from_dict(data).prompt_cache == value
    assert LlamaCppChatGenerator("small", prompt_cache=tmp_path).prompt_cache == str(tmp_path)
    for bad in ("", 1, None):
        with pytest.raises(ConfigurationError, match="prompt_cache"):
            LlamaCppChatGenerator("small", prompt_cache=bad)  # type: ignore[arg-type]
