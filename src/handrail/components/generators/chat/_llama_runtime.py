"""Talking to the ``xllamacpp`` runtime: loading a model, the request's message shape, streaming a reply.

The runtime is llama.cpp's server library used in-process: ``Server(params)`` loads the model and
``handle_chat_completions(body, callback)`` takes an OpenAI-style chat request and calls
``callback`` with each streamed chunk (a dict) on the calling thread; the callback returns True
to stop generation. The runtime swallows exceptions raised in the callback, so
:func:`stream_completion` keeps them and raises them itself.

Ctrl-C needs the same care: while the calling thread waits in the runtime, Python runs a pending
SIGINT handler at the next Python code that thread executes, which is the runtime's callback
wrapper (it parses each chunk with ``json.loads`` before calling ours). The KeyboardInterrupt
would be raised there, outside any code of ours, and swallowed, and generation would go on. So
on the main thread :func:`stream_completion` runs the current SIGINT handler inside a guard for
the duration of the request: what it raises is kept, generation stops at the next chunk, and the
exception is raised once the runtime returns.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from handrail.components.generators.chat._prompt_cache import CachedServer, PromptCache, SlotClient
from handrail.core.secret import register_secret_value
from handrail.dataclasses.chat_message import ChatMessage, ChatRole, result_text
from handrail.errors import GenerationError

__all__ = [
    "FORMAT_HINT",
    "Completion",
    "cpu_count",
    "model_identity",
    "start_server",
    "stream_completion",
    "to_wire",
    "wire_arguments",
]

FORMAT_HINT = (
    'Reply with one JSON object: a tool call {"name": ..., "arguments": {...}}, or, once you can fully answer '
    'the user, {"final_answer": "<your complete answer, written as you would normally reply>"}.'
)
"""Added to the system message when tools are offered, so the model knows the final-answer form."""


@dataclass(slots=True)
class Completion:
    """One finished generation of the runtime."""

    text: str = ""
    """The raw reply text."""
    finish_reason: str | None = None
    """``"stop"`` or ``"length"`` as the runtime reported it."""
    usage: dict[str, int] = field(default_factory=dict)
    """``prompt_tokens``, ``completion_tokens``, ``total_tokens``; empty when the runtime sent none."""


def cpu_count() -> int:
    """Return how many CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def model_identity(path: Path, sha256: str | None) -> str:
    """What identifies a model file's content: ``sha256:<hex>`` when known, else its path, size and mtime."""
    if sha256:
        return f"sha256:{sha256}"
    stat = path.stat()
    return f"file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def start_server(
    runtime: Any,
    path: Path,
    *,
    n_ctx: int,
    n_threads: int,
    prompt_cache: Path | None = None,
    model_id: str = "",
) -> Any:
    """Load the GGUF file at ``path`` into a new runtime server and wait until it serves.

    Args:
        runtime: The imported ``xllamacpp`` module.
        path: The model file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads for prompt processing and generation.
        prompt_cache: A directory to keep the KV state of request prefixes in (see ``_prompt_cache``);
            None: none.
        model_id: What identifies the model file's content (its sha256, or its path, size and
            modification time): part of the prompt cache's keys.

    Returns:
        The ``xllamacpp.Server``, wrapped in a ``CachedServer`` when ``prompt_cache`` is set. Its log
        is silenced; its HTTP listener binds ``127.0.0.1`` on a random free port behind a random API
        key; it decodes one request at a time.

    Raises:
        GenerationError: When the runtime cannot load the model.
    """
    params = runtime.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.n_parallel = 1
    # llama.cpp's fitting of unset parameters to free memory loads the model's metadata and vocabulary a
    # first time (1-5 s on 2 cores) to pick what handrail sets anyway (n_ctx; no GPU layers on CPU).
    params.fit_params = False
    params.verbosity = -1  # silence llama.cpp's log
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    key = secrets.token_urlsafe(32)
    register_secret_value(key)  # masked wherever an error or a log could show it
    params.api_keys = [key]  # the listener refuses every other local client
    params.endpoint_metrics = True
    cache = PromptCache(prompt_cache.expanduser().absolute()) if prompt_cache is not None else None
    params.endpoint_slots = cache is not None
    if cache is not None:
        params.slot_save_path = f"{cache.directory}{os.sep}"  # the runtime appends file names to it
    try:
        server = runtime.Server(params)
        # Wait until the runtime's main loop runs: a server released before that never shuts down.
        server.handle_metrics()
    except RuntimeError as exc:
        raise GenerationError(f"llama.cpp could not load the model {path}: {exc}") from exc
    address = getattr(server, "listening_address", None)
    if cache is None or not isinstance(address, str) or not address:
        return server
    layout = {
        "runtime": str(getattr(runtime, "__version__", "")),
        "model": model_id or str(path.resolve()),
        "n_ctx": n_ctx,
        "kv": [str(getattr(params, name, "")) for name in ("cache_type_k", "cache_type_v", "flash_attn_type")],
    }
    return CachedServer(server, SlotClient(address, key), cache, layout)


def _take(chunk: Any, done: Completion, parts: list[str], on_text: Callable[[str], None],
          on_progress: Callable[[dict[str, Any]], None] | None) -> None:  # fmt: skip
    """Read one streamed chunk of the runtime into ``done`` and ``parts``, passing on its text and progress."""
    if not isinstance(chunk, dict) or "choices" not in chunk:
        raise GenerationError(f"llama.cpp answered with an error: {json.dumps(chunk)[:300]}")
    if on_progress is not None and isinstance(chunk.get("prompt_progress"), dict):
        on_progress(chunk["prompt_progress"])
    for choice in chunk["choices"]:
        content = (choice.get("delta") or {}).get("content")
        if content:
            parts.append(content)
            on_text(content)
        done.finish_reason = choice.get("finish_reason") or done.finish_reason
    if chunk.get("usage"):
        done.usage = {k: int(chunk["usage"].get(k, 0)) for k in ("prompt_tokens", "completion_tokens")}
        done.usage["total_tokens"] = done.usage["prompt_tokens"] + done.usage["completion_tokens"]


def stream_completion(
    server: Any,
    body: dict[str, Any],
    on_text: Callable[[str], None],
    cancel: threading.Event,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> Completion:
    """Run one streamed chat completion, passing each text fragment to ``on_text`` as it arrives.

    Args:
        server: A server from :func:`start_server`.
        body: The chat request; it must ask for ``stream`` with ``stream_options.include_usage``.
        on_text: Called with each fragment of the reply text, on this thread.
        cancel: Set it (from any thread) to stop generation at the next token.
        on_progress: Called with the runtime's ``prompt_progress`` (``total``, ``cache``, ``processed``, ``time_ms``)
            as the prompt is evaluated (asked for with ``return_progress``); None asks for none.

    Returns:
        The whole reply text, finish reason and usage.

    Raises:
        GenerationError: When the runtime reports an error or the stream ends without a finish reason.
        Exception: Whatever ``on_text`` raised (generation stops at once).
        KeyboardInterrupt: On Ctrl-C on the main thread (generation stops at the next token), or
            whatever else the SIGINT handler raised.
    """
    done = Completion()
    if on_progress is not None:
        body = {**body, "return_progress": True}
    parts: list[str] = []
    failure: list[BaseException] = []

    def handle(chunk: Any) -> bool:
        if failure:  # a guarded signal handler raised while the runtime held the thread: stop
            return True
        try:
            _take(chunk, done, parts, on_text, on_progress)
        except BaseException as exc:  # the runtime swallows callback errors: keep it to raise it below
            failure.append(exc)
            return True
        return bool(failure) or cancel.is_set()

    try:
        with _guarded_sigint(failure.append):
            progress = functools.partial(_peek_progress, failure, on_progress)
            _request(server, body, handle, lambda: bool(failure) or cancel.is_set(), progress)
    except RuntimeError as exc:
        if failure:  # a Ctrl-C (or callback error) came first: that is what stopped the runtime
            raise failure[0] from None
        raise GenerationError(f"llama.cpp failed: {exc}") from exc
    if failure:
        raise failure[0]
    if done.finish_reason is None and not cancel.is_set():
        raise GenerationError("llama.cpp ended the reply without a finish reason (its stream was cut short).")
    done.text = "".join(parts)
    return done


def _peek_progress(
    failure: list[BaseException], on_progress: Callable[[dict[str, Any]], None] | None, chunk: Any
) -> None:
    """Pass on a prefix request's ``prompt_progress``, keeping what ``on_progress`` raises in ``failure``."""
    if on_progress is None or failure or not isinstance(chunk, dict):
        return
    try:
        if isinstance(chunk.get("prompt_progress"), dict):
            on_progress(chunk["prompt_progress"])
    except BaseException as exc:  # the runtime swallows callback errors: stream_completion raises it
        failure.append(exc)


def _request(server: Any, body: dict[str, Any], handle: Callable[[Any], bool], stopped: Callable[[], bool],
             progress: Callable[[Any], None]) -> None:  # fmt: skip
    """Run ``body`` on ``server``; a ``CachedServer`` first restores or saves the prefix's KV state."""
    prepare = getattr(server, "prepare", None)
    if callable(prepare):
        prepare(body, stopped, progress)
    if not stopped():
        server.handle_chat_completions(body, handle)


@contextmanager
def _guarded_sigint(keep: Callable[[BaseException], None]) -> Iterator[None]:
    """Run the SIGINT handler inside a guard that passes what it raises to ``keep`` (main thread only).

    Python handlers run only on the main thread, so elsewhere (and when SIGINT is ignored or left to
    the OS) this does nothing. The previous handler is back in place on exit; ``signal.signal``
    first runs any signal still pending, so a Ctrl-C that came in just before is kept, not lost.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield
        return
    handler = previous

    def guarded(signum: int, frame: Any) -> None:
        try:
            handler(signum, frame)
        except BaseException as exc:  # KeyboardInterrupt from the default handler, above all
            keep(exc)

    signal.signal(signal.SIGINT, guarded)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def wire_arguments(arguments: dict[str, Any] | str) -> str:
    """Return a call's arguments as the JSON text the chat template needs.

    A dict becomes its JSON; raw text that is a JSON object is kept; other raw text is sent as a
    JSON string (the runtime refuses arguments that are not JSON).
    """
    if isinstance(arguments, dict):
        return json.dumps(arguments, ensure_ascii=False)
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    return arguments if isinstance(parsed, dict) else json.dumps(arguments, ensure_ascii=False)


def to_wire(messages: Sequence[ChatMessage], tools_offered: bool) -> list[dict[str, Any]]:
    """Convert messages to the runtime's OpenAI-style message dicts.

    Args:
        messages: The conversation.
        tools_offered: Add :data:`FORMAT_HINT` to the leading system message (or as one).

    Returns:
        One dict per message (one per result for tool messages: its text, each image of a result of content
        parts as its placeholder text); assistant calls carry their ids and JSON argument text.
    """
    wire: list[dict[str, Any]] = []
    for message in messages:
        text = "\n".join(message.texts)
        if message.role is ChatRole.TOOL:
            for result in message.tool_call_results:
                content = result_text(result, image_placeholders=True)  # the model reads text only
                wire.append({"role": "tool", "tool_call_id": result.origin.id or "", "content": content})
        elif message.role is ChatRole.ASSISTANT and message.tool_calls:
            calls = [
                {
                    "id": call.id or f"call_{i}",
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": wire_arguments(call.arguments)},
                }
                for i, call in enumerate(message.tool_calls, start=1)
            ]
            wire.append({"role": "assistant", "content": text or None, "tool_calls": calls})
        else:
            wire.append({"role": message.role.value, "content": text})
    if tools_offered:
        if wire and wire[0]["role"] == "system":
            wire[0] = {**wire[0], "content": f"{wire[0]['content']}\n\n{FORMAT_HINT}".lstrip()}
        else:
            wire.insert(0, {"role": "system", "content": FORMAT_HINT})
    return wire
