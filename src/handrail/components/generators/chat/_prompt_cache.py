"""The KV state of a request's system message and tools, kept on disk between processes.

Every run of an agent starts its prompt with the same system message and tool definitions (Qwen's
chat template puts the tools into the system turn), and on 2 cores evaluating them is most of the
first step's time. llama.cpp can save a slot's KV state to a file and restore it
(``POST /slots/0?action=save|restore`` on the runtime's listener, files under ``slot_save_path``).
:class:`CachedServer` does that around the runtime server:

1. On the first request whose prefix (system message + tools) it has not handled yet, it looks
   for ``<key>.bin`` in the cache directory; the key hashes the prefix and everything the KV bytes
   depend on (the ``layout``: model file, runtime version, context size, KV types). A file whose
   sidecar ``<key>.json`` records another size or sha256 is deleted and ignored.
2. A good file is restored into the slot. The runtime compares the request's tokens with the
   restored ones and evaluates only what follows their common prefix, so a file that does not
   match costs time, never correctness.
3. Without one, it evaluates the prefix alone (the system message and the tools, one token of
   reply), saves the slot to a temporary file created with mode 0600, and renames it into place
   beside its sidecar. The request itself then reuses that state from memory.

Only the prefix is stored: never the user's messages or tool results. Any failure of these steps
(a full disk, a refused restore, a listener that does not answer) is logged at debug level and
leaves the request to run uncached. At most :data:`MAX_FILES` entries are kept (least recently
used go first).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["MAX_FILES", "CachedServer", "PromptCache", "SlotClient", "default_prompt_cache_dir", "prefix_key"]

MAX_FILES = 8
"""Entries kept per cache directory (about 12 MB each for the default model's 450-token prefix)."""

FORMAT = 1
"""Bumped when what a file holds, or how its key is made, changes."""

_log = logging.getLogger(__name__)


def default_prompt_cache_dir() -> Path:
    """Return ``$XDG_CACHE_HOME/handrail/prompt-cache``, or ``~/.cache/handrail/prompt-cache`` without it."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "handrail" / "prompt-cache"


def prefix_key(layout: dict[str, Any], body: dict[str, Any]) -> str | None:
    """Return the cache key of a chat request's prefix, or None when it has none worth caching.

    Args:
        layout: What the KV bytes depend on besides the prompt (model identity, runtime version, ``n_ctx``,
            KV cache types, attention kind); any JSON-able values.
        body: The chat request; its prefix is the leading system message and the tools.

    Returns:
        40 hex digits, or None when the request starts with no system message.
    """
    messages = body.get("messages") or []
    if not messages or not isinstance(messages[0], dict) or messages[0].get("role") != "system":
        return None
    payload = {"format": FORMAT, "layout": layout, "system": messages[0], "tools": body.get("tools") or []}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PromptCache:
    """The cache directory: one ``<key>.bin`` state file and its ``<key>.json`` sidecar per prefix.

    Args:
        directory: Created (mode 0700) when missing.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def ensure_directory(self) -> None:
        """Create the directory (mode 0700) if needed."""
        if not self.directory.is_dir():
            self.directory.mkdir(parents=True, exist_ok=True)
            os.chmod(self.directory, 0o700)

    def state_file(self, key: str) -> Path:
        """The state file of ``key`` (it may not exist)."""
        return self.directory / f"{key}.bin"

    def _sidecar(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def usable(self, key: str) -> bool:
        """Whether ``key``'s state file exists and matches its sidecar; a damaged entry is deleted."""
        state, sidecar = self.state_file(key), self._sidecar(key)
        if not state.exists() and not sidecar.exists():
            return False
        try:
            recorded = json.loads(sidecar.read_text())
            good = (
                isinstance(recorded, dict)
                and recorded.get("format") == FORMAT
                and recorded.get("size") == state.stat().st_size
                and recorded.get("sha256") == _sha256_of(state)
            )
        except (OSError, ValueError):
            good = False
        if not good:
            _log.debug("prompt cache: discarding the damaged or stale entry %s", key)
            self.discard(key)
        return good

    def new_temporary(self, key: str) -> Path:
        """Create an empty file (mode 0600) for the runtime to write a state into; it keeps the mode."""
        self.ensure_directory()
        path = self.directory / f"{key}.{secrets.token_hex(4)}.tmp"
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return path

    def commit(self, key: str, temporary: Path, tokens: int) -> None:
        """Move a written state file into place as ``key``'s entry, with its sidecar, then prune."""
        os.chmod(temporary, 0o600)
        record = {"format": FORMAT, "size": temporary.stat().st_size, "sha256": _sha256_of(temporary)}
        record["tokens"] = tokens
        sidecar_tmp = temporary.with_suffix(".json.tmp")
        fd = os.open(sidecar_tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o600)
        with os.fdopen(fd, "w") as stream:
            json.dump(record, stream)
        os.replace(temporary, self.state_file(key))
        os.replace(sidecar_tmp, self._sidecar(key))
        self.prune()

    def touch(self, key: str) -> None:
        """Mark ``key`` as just used (pruning removes the least recently used)."""
        with contextlib.suppress(OSError):
            os.utime(self.state_file(key))

    def discard(self, key: str) -> None:
        """Delete ``key``'s files, if any."""
        for path in (self.state_file(key), self._sidecar(key)):
            path.unlink(missing_ok=True)

    def prune(self, keep: int = MAX_FILES) -> None:
        """Keep the ``keep`` most recently used entries; delete temporary files older than 10 minutes."""
        now = time.time()
        for path in self.directory.glob("*.tmp"):
            try:
                if now - path.stat().st_mtime > 600:
                    path.unlink(missing_ok=True)
            except OSError:
                pass
        entries: list[tuple[float, Path]] = []
        for path in self.directory.glob("*.bin"):
            with contextlib.suppress(OSError):  # another process may delete it meanwhile
                entries.append((path.stat().st_mtime, path))
        for _, path in sorted(entries, reverse=True)[keep:]:
            self.discard(path.stem)


class SlotClient:
    """Slot save and restore on the runtime's loopback listener (never through a proxy).

    Args:
        address: The listener's ``http://127.0.0.1:<port>``.
        api_key: The key the listener was started with.
        timeout: Seconds to wait for an answer.
    """

    def __init__(self, address: str, api_key: str, timeout: float = 30.0) -> None:
        parts = urlsplit(address)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"not a listener address: {address!r}")
        self._host, self._port = parts.hostname, parts.port
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._timeout = timeout

    def action(self, action: str, filename: str) -> dict[str, Any]:
        """Run ``save`` or ``restore`` of slot 0 with ``filename`` (relative to the slot directory).

        Raises:
            OSError: The listener could not be reached.
            RuntimeError: It refused (the message holds its answer's first 200 characters).
        """
        connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            body = json.dumps({"filename": filename})
            connection.request("POST", f"/slots/0?action={action}", body=body, headers=self._headers)
            response = connection.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"slot {action} answered {response.status}: {text[:200]}")
        answer = json.loads(text)
        if not isinstance(answer, dict):
            raise RuntimeError(f"slot {action} answered {text[:200]}")
        return answer


Stop = Callable[[], bool]


class CachedServer:
    """A runtime server whose requests start from their prefix's KV state kept on disk.

    Anything but :meth:`prepare` goes to the wrapped server unchanged.

    Args:
        server: The ``xllamacpp.Server``, started with ``slot_save_path`` = ``cache.directory``.
        slots: Its listener's slot actions.
        cache: The cache directory.
        layout: What the KV bytes depend on besides the prompt (part of every key).
    """

    def __init__(self, server: Any, slots: SlotClient, cache: PromptCache, layout: dict[str, Any]) -> None:
        self.server = server
        self.slots = slots
        self.cache = cache
        self.layout = layout
        self._handled: set[str] = set()
        self._lock = threading.Lock()
        self.last_event: str | None = None
        """What the last :meth:`prepare` did: ``"restored"``, ``"saved"``, ``"seen"`` or ``"skipped"``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.server, name)

    def prepare(self, body: dict[str, Any], stop: Stop, peek: Callable[[Any], None] | None = None) -> None:
        """Make sure the slot holds ``body``'s prefix: restore it from disk, or evaluate and save it.

        Never raises (but what ``stop`` or ``peek`` raise); a failure leaves the request to run uncached.

        Args:
            body: The chat request about to run.
            stop: Polled while the prefix is evaluated; True stops it (nothing is saved).
            peek: Sees each chunk of the prefix's evaluation (which asks for ``return_progress`` when
                ``body`` does).
        """
        key = prefix_key(self.layout, body)
        with self._lock:
            if key is None or key in self._handled:
                self.last_event = "seen" if key else "skipped"
                return
            try:
                self.last_event = self._prepare(key, body, stop, peek)
            except Exception as exc:  # the cache only saves time: never fail a request over it
                _log.debug("prompt cache: %s failed: %s", key, exc)
                self.last_event = "skipped"
                return
            if self.last_event != "skipped":
                self._handled.add(key)

    def _prepare(self, key: str, body: dict[str, Any], stop: Stop, peek: Callable[[Any], None] | None) -> str:
        if self.cache.usable(key):
            try:
                answer = self.slots.action("restore", self.cache.state_file(key).name)
            except (OSError, RuntimeError, ValueError) as exc:
                _log.debug("prompt cache: restoring %s failed (%s); evaluating the prefix again", key, exc)
                self.cache.discard(key)
            else:
                if int(answer.get("n_restored", 0)) > 0:
                    self.cache.touch(key)
                    return "restored"
                self.cache.discard(key)
        tokens = self._evaluate_prefix(body, stop, peek)
        if tokens is None:
            return "skipped"
        temporary = self.cache.new_temporary(key)
        try:
            answer = self.slots.action("save", temporary.name)
            saved = int(answer.get("n_saved", -1))
            if saved not in (tokens, tokens + 1):  # another request ran in between: not our prefix
                raise RuntimeError(f"the slot held {saved} tokens, the prefix {tokens}")
            self.cache.commit(key, temporary, saved)
        finally:
            temporary.unlink(missing_ok=True)
        return "saved"

    def _evaluate_prefix(self, body: dict[str, Any], stop: Stop, peek: Callable[[Any], None] | None) -> int | None:
        """Run the prefix alone (one token of reply); return its prompt tokens, or None if it did not finish."""
        prefix: dict[str, Any] = {
            "messages": body["messages"][:1],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 1,
            "temperature": 0.0,
        }
        if body.get("tools"):
            prefix["tools"] = body["tools"]
        if body.get("return_progress"):
            prefix["return_progress"] = True
        seen: dict[str, Any] = {}

        def on_chunk(chunk: Any) -> bool:
            if peek is not None:
                peek(chunk)
            if isinstance(chunk, dict):
                if "choices" not in chunk:
                    seen["error"] = True
                for choice in chunk.get("choices") or []:
                    seen["finish"] = choice.get("finish_reason") or seen.get("finish")
                if chunk.get("usage"):
                    seen["prompt_tokens"] = chunk["usage"].get("prompt_tokens")
            return stop()

        self.server.handle_chat_completions(prefix, on_chunk)
        tokens = seen.get("prompt_tokens")
        if seen.get("error") or not seen.get("finish") or not isinstance(tokens, int) or stop():
            return None
        return tokens
