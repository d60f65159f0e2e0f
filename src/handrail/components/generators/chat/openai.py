"""OpenAIChatGenerator: chat models behind the OpenAI API or any OpenAI-compatible server.

The conversion to and from OpenAI's wire format lives only in the private ``_openai_wire``
(requests), ``_openai_replies`` (replies) and ``_openai_errors`` (failures) modules next to this
one: the rest of handrail never sees a provider's message dicts. HTTP, timeouts and retries are
the ``openai`` SDK's; it is imported when this module is loaded, which only happens on use
(``handrail.components.generators.chat`` exports the class lazily).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import os
import sys
import threading
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from handrail.components.generators.chat._openai_errors import decoding, server_errors
from handrail.components.generators.chat._openai_replies import StreamReader, completion_to_replies
from handrail.components.generators.chat._openai_wire import (
    check_generation_kwargs,
    load_sdk,
    messages_to_wire,
    tool_to_wire,
)
from handrail.components.generators.chat._wire_names import WireNames
from handrail.core._urls import register_url_passwords
from handrail.core.component import component
from handrail.core.secret import Secret, deserialize_secret
from handrail.core.serialization import check_scalar_types, deserialize_callable, qualified_name, serialize_callable
from handrail.dataclasses.chat_message import ChatMessage
from handrail.dataclasses.streaming import StreamingCallback, is_async_callback
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import deserialize_tools, flatten_tools, serialize_tools

if TYPE_CHECKING:
    import httpx
    from openai import AsyncOpenAI, AsyncStream, OpenAI, Stream
    from openai.types.chat import ChatCompletionChunk

__all__ = ["OpenAIChatGenerator"]

_OPENAI_API_KEY = Secret.from_env_var("OPENAI_API_KEY")


@dataclass(frozen=True, slots=True)
class _Request:
    body: dict[str, Any]
    """Keyword arguments for ``chat.completions.create``."""
    callback: StreamingCallback | None
    """The callback of this run; the request streams exactly when it is set."""
    names: WireNames
    """The tools' names as sent; the reply's calls are mapped back through it."""


@component
class OpenAIChatGenerator:
    """Chat completions from OpenAI or any OpenAI-compatible server (vLLM, Ollama, llama.cpp server, LM Studio).

    The API key is resolved on first use, so the generator can be built and serialized
    without it. For a local server that needs no key, pass
    ``api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False)`` (serializable: when the
    variable is unset the placeholder ``"none"`` is sent) or ``Secret.from_token("none")``.

    Streaming happens exactly when a streaming callback is given (init or run): every SDK
    chunk becomes a :class:`~handrail.dataclasses.StreamingChunk` (tool-call fragments as
    :class:`~handrail.dataclasses.ToolCallDelta`), goes to the callback in order, and the
    reply is assembled by :class:`~handrail.dataclasses.streaming.ChunkAssembler`. Replies
    carry ``meta`` ``{"model", "index", "finish_reason", "usage"}`` (OpenAI's usage names).

    OpenAI takes tool names of ``[a-zA-Z0-9_-]{1,64}`` only. A tool whose name does not fit
    (``"Addition tool"``) is sent under a mapped name (``"Addition_tool"``; a non-ASCII or
    over-long name gets a short hash suffix), and the model's calls, streamed fragments
    included, come back under the tool's own name. Two tools that would be sent under one
    name are refused before anything is sent.

    Args:
        api_key: The API key (default: read ``OPENAI_API_KEY`` on first use).
        model: The model name the server knows.
        streaming_callback: Receives each chunk; a run-time callback wins.
        api_base_url: The server's base URL, e.g. ``"http://localhost:8000/v1"`` (default: the
            SDK's, i.e. ``OPENAI_BASE_URL`` or OpenAI's).
        organization: The OpenAI organization id, if any.
        generation_kwargs: Extra arguments of ``chat.completions.create`` (``temperature``,
            ``max_tokens``, ``tool_choice``, ``extra_body`` for server-specific ones, ...).
        timeout: Seconds to wait for the server per request (default: the ``OPENAI_TIMEOUT`` environment
            variable, else 30, as Haystack's).
        max_retries: Retries of failed requests, with the SDK's backoff (default: ``OPENAI_MAX_RETRIES``, else 5,
            as Haystack's).
        tools: Tools offered to the model unless a run passes its own.
        tools_strict: Ask the server to follow the tools' schemas exactly (OpenAI's ``strict``).
        http_client_kwargs: Keyword arguments for the ``httpx.Client`` / ``httpx.AsyncClient`` the SDK is given
            (``proxy``, ``verify``, ``limits``, ...), built on first use; serialized (Haystack's parameter).
        http_client: An ``httpx.Client`` for the sync SDK client (proxies, tests with a mock transport);
            keyword-only, never serialized.
        async_http_client: An ``httpx.AsyncClient`` for the async SDK client; keyword-only, never serialized.

    Raises:
        ConfigurationTypeError: For an argument of the wrong type (an API key given as ``str``
            included: wrap it in a Secret).
        ConfigurationError: For an invalid value, a reserved or unknown generation kwarg, or two
            tools whose names would be sent as one.
        ImportError: When the ``openai`` package is not installed.

    Examples:
        >>> gen = OpenAIChatGenerator(model="qwen2.5", api_base_url="http://localhost:8000/v1",
        ...                           api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False))
        >>> gen.to_dict()["init_parameters"]["api_key"]
        {'type': 'env_var', 'env_vars': ['OPENAI_API_KEY'], 'strict': False}
    """

    accepts_tool_result_images: bool = False
    """OpenAI's Chat API takes text only in a tool message: a tool result's images are sent as placeholder text
    parts (``[image: image/png, 12,345 bytes, not shown to this model]``); see
    :func:`~handrail.components.generators.types.accepts_tool_result_images`."""

    def __init__(
        self,
        api_key: Secret = _OPENAI_API_KEY,
        model: str = "gpt-4o-mini",
        streaming_callback: StreamingCallback | None = None,
        api_base_url: str | None = None,
        organization: str | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        tools_strict: bool = False,
        http_client_kwargs: dict[str, Any] | None = None,
        *,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        load_sdk()
        _check_settings(api_key, model, streaming_callback, api_base_url, organization, tools_strict)
        _check_transport(timeout, max_retries, http_client, async_http_client)
        _check_http_client_kwargs(http_client_kwargs, http_client, async_http_client)
        check_generation_kwargs(generation_kwargs or {})
        WireNames.of(flatten_tools(tools))
        self.api_key = api_key
        self.model = model
        self.streaming_callback = streaming_callback
        self.api_base_url = api_base_url
        register_url_passwords(api_base_url)  # errors name the URL without it; an echo of it is masked
        self.organization = organization
        self.generation_kwargs = dict(generation_kwargs or {})
        self.timeout = timeout
        self.max_retries = max_retries
        self.tools = tools
        self.tools_strict = tools_strict
        self.http_client_kwargs = copy.deepcopy(http_client_kwargs)
        self.http_client = http_client
        self.async_http_client = async_http_client
        self._lock = threading.Lock()
        self._client: OpenAI | None = None
        self._async_clients: weakref.WeakKeyDictionary[
            AbstractEventLoop, tuple[AsyncOpenAI, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()

    # ---------------------------------------------------------------- clients

    def _client_options(self) -> dict[str, Any]:
        try:
            key = self.api_key.resolve_value()
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"OpenAIChatGenerator needs an API key. {exc} Set it, or pass api_key=Secret.from_token(...); "
                f"for a local server without auth use Secret.from_env_var('OPENAI_API_KEY', strict=False)."
            ) from None
        options: dict[str, Any] = {"api_key": key or "none", "base_url": self.api_base_url}
        if self.organization is not None:
            options["organization"] = self.organization
        options["timeout"] = self.timeout if self.timeout is not None else _env_number("OPENAI_TIMEOUT", float, 30.0)
        options["max_retries"] = (
            self.max_retries if self.max_retries is not None else _env_number("OPENAI_MAX_RETRIES", int, 5)
        )
        return options

    def _sync_client(self) -> OpenAI:
        with self._lock:
            if self._client is None:
                options = self._client_options()
                http_client = self.http_client or _kwargs_client(self.http_client_kwargs, asynchronous=False)
                self._client = cast("OpenAI", load_sdk().OpenAI(http_client=cast(Any, http_client), **options))
            return self._client

    async def _async_client(self) -> AsyncOpenAI:
        # An async client's connections belong to one event loop, so each loop gets its own, closed when that
        # loop shuts down (asyncio.run finalizes async generators before it closes the loop). Left open, the
        # SDK's client closes itself when collected, scheduling the close on whatever loop then runs: "Task
        # exception was never retrieved ... Event loop is closed" on stderr.
        loop = get_running_loop()
        with self._lock:
            held = self._async_clients.get(loop)
            if held is not None:
                return held[0]
            options = self._client_options()
            http_client = self.async_http_client or _kwargs_client(self.http_client_kwargs, asynchronous=True)
            client = cast("AsyncOpenAI", load_sdk().AsyncOpenAI(http_client=cast(Any, http_client), **options))
            closer = _closed_with_the_loop(client, own=self.async_http_client is None)
            self._async_clients[loop] = (client, closer)
        await anext(closer)  # started: the loop now finalizes it at shutdown
        return client

    def warm_up(self) -> None:
        """Resolve the API key now (so a missing key fails early) and warm up the init tools; idempotent.

        Raises:
            ConfigurationError: When the API key cannot be resolved (the message names the variables).
        """
        self._client_options()
        for tool in flatten_tools(self.tools):
            tool.warm_up()

    # ------------------------------------------------------------------- runs

    def _prepare(
        self,
        messages: Sequence[ChatMessage],
        streaming_callback: StreamingCallback | None,
        generation_kwargs: Mapping[str, Any] | None,
        tools: Sequence[Tool | Toolset] | Toolset | None,
        tools_strict: bool | None,
        *,
        sync_run: bool,
    ) -> _Request:
        callback = streaming_callback or self.streaming_callback
        if callback is not None and not callable(callback):
            raise ConfigurationTypeError(f"streaming_callback must be callable, got {callback!r}.")
        if sync_run and callback is not None and is_async_callback(callback):
            raise ConfigurationTypeError(
                "OpenAIChatGenerator.run needs a sync streaming_callback; use run_async for an async one."
            )
        if tools_strict is not None and not isinstance(tools_strict, bool):
            raise ConfigurationTypeError(f"tools_strict must be a bool or None, got {tools_strict!r}.")
        strict = self.tools_strict if tools_strict is None else tools_strict
        kwargs = {**self.generation_kwargs, **(generation_kwargs or {})}
        check_generation_kwargs(kwargs)
        body: dict[str, Any] = {"model": self.model, "messages": messages_to_wire(messages), **kwargs}
        run_tools = flatten_tools(tools if tools is not None else self.tools)
        names = WireNames.of(run_tools)
        if run_tools:
            body["tools"] = [tool_to_wire(t, strict) for t in run_tools]
        names.request(body)
        if callback is not None:
            if kwargs.get("n") not in (None, 1):
                raise ConfigurationError(f"Cannot stream several choices (n={kwargs['n']}); set n=1 or stream none.")
            body["stream"] = True
            body.setdefault("stream_options", {"include_usage": True})
        return _Request(body, callback, names)

    @component.output_types(replies=list[ChatMessage])
    def run(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        *,
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        tools_strict: bool | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Send ``messages`` to the server and return its reply.

        Args:
            messages: The conversation; assistant tool calls and tool results need call ids.
            streaming_callback: A sync callback for this run (wins over the init one); streams the reply.
            generation_kwargs: Merged over the init ones for this run.
            tools: This run's tools (replace the init ones; ``[]`` offers none).
            tools_strict: This run's ``strict`` for the tools' schemas (None: the init one).

        Returns:
            ``{"replies": [ChatMessage]}``: one assistant message per choice (one when streaming).

        Raises:
            ConfigurationTypeError: An async callback, or messages that are not ChatMessages.
            ConfigurationError: A missing API key or call id, bad generation kwargs, or two tools
                whose names would be sent as one; nothing was sent.
            GenerationError: The server is unreachable (one line naming its URL), timed out, lost
                the connection before its reply was complete, answered with an error status
                (``status_code`` set), or answered with something that is not a chat completion
                (not JSON, no choices, an ``{"error": ...}`` body, a stream without events or one
                that ended before a ``finish_reason``).
        """
        request = self._prepare(messages, streaming_callback, generation_kwargs, tools, tools_strict, sync_run=True)
        client = self._sync_client()
        with server_errors(str(client.base_url).rstrip("/")) as exchange:
            if request.callback is None:
                with decoding("the response body"):
                    completion = client.chat.completions.create(**request.body)
                return {"replies": [request.names.reply(m) for m in completion_to_replies(completion)]}
            reader = StreamReader()
            with cast("Stream[ChatCompletionChunk]", client.chat.completions.create(**request.body)) as stream:
                exchange.streaming = True
                events = iter(stream)
                while (chunk := reader.next_chunk(events)) is not None:
                    request.callback(request.names.chunk(chunk))
            return {"replies": [request.names.reply(reader.message())]}

    async def run_async(
        self,
        messages: list[ChatMessage],
        streaming_callback: StreamingCallback | None = None,
        generation_kwargs: dict[str, Any] | None = None,
        *,
        tools: Sequence[Tool | Toolset] | Toolset | None = None,
        tools_strict: bool | None = None,
    ) -> dict[str, list[ChatMessage]]:
        """Async twin of :meth:`run` (same arguments, result and errors); the callback may be sync or async."""
        request = self._prepare(messages, streaming_callback, generation_kwargs, tools, tools_strict, sync_run=False)
        client = await self._async_client()
        with server_errors(str(client.base_url).rstrip("/")) as exchange:
            if request.callback is None:
                with decoding("the response body"):
                    completion = await client.chat.completions.create(**request.body)
                return {"replies": [request.names.reply(m) for m in completion_to_replies(completion)]}
            reader = StreamReader()
            stream = cast("AsyncStream[ChatCompletionChunk]", await client.chat.completions.create(**request.body))
            async with stream:
                exchange.streaming = True
                events = aiter(stream)
                while (chunk := await reader.anext_chunk(events)) is not None:
                    result = request.callback(request.names.chunk(chunk))
                    if inspect.isawaitable(result):
                        await result
            return {"replies": [request.names.reply(reader.message())]}

    # ---------------------------------------------------------- serialization

    def to_dict(self) -> dict[str, Any]:
        """Serialize to ``{"type", "init_parameters"}``; the key as variable names, never the clients.

        Raises:
            SerializationError: For a token API key (it would be written in plain text), or a
                callback or tool that cannot be imported back (lambdas, closures).
        """
        callback = self.streaming_callback
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "api_key": self.api_key.to_dict(),
                "model": self.model,
                "streaming_callback": serialize_callable(callback) if callback is not None else None,
                "api_base_url": self.api_base_url,
                "organization": self.organization,
                "generation_kwargs": copy.deepcopy(self.generation_kwargs),
                "timeout": self.timeout,
                "max_retries": self.max_retries,
                "tools": serialize_tools(self.tools),
                "tools_strict": self.tools_strict,
                "http_client_kwargs": copy.deepcopy(self.http_client_kwargs),
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpenAIChatGenerator:
        """Rebuild a generator from :meth:`to_dict` output (``data`` is not modified).

        Haystack 2.x's form is read too: the same init parameters, its tools in ``{"type", "data"}`` envelopes.

        Raises:
            SerializationError: For a malformed secret, callback or tool, or a setting of the wrong type.
        """
        params = copy.deepcopy(dict(data["init_parameters"]))
        check_scalar_types(cls, params)
        if "api_key" in params:
            params["api_key"] = deserialize_secret(params["api_key"]) or _OPENAI_API_KEY
        if params.get("streaming_callback"):
            params["streaming_callback"] = deserialize_callable(params["streaming_callback"])
        if params.get("tools") is not None:
            params["tools"] = deserialize_tools(params["tools"])
        return cls(**params)


def _check_settings(
    api_key: Any,
    model: Any,
    streaming_callback: Any,
    api_base_url: Any,
    organization: Any,
    tools_strict: Any,
) -> None:
    """Check the generator's init arguments about the model and the account (before anything is stored).

    Raises:
        ConfigurationTypeError: For a value of the wrong type.
        ConfigurationError: For an empty model name.
    """
    if not isinstance(api_key, Secret):
        raise ConfigurationTypeError(
            f"api_key must be a Secret, got {type(api_key).__name__}: use Secret.from_env_var('OPENAI_API_KEY') "
            f"or Secret.from_token(...)."
        )
    if not isinstance(model, str) or not model:
        raise ConfigurationError(f"model must be a non-empty string, got {model!r}.")
    if streaming_callback is not None and not callable(streaming_callback):
        raise ConfigurationTypeError(f"streaming_callback must be callable, got {streaming_callback!r}.")
    if api_base_url is not None and not isinstance(api_base_url, str):
        raise ConfigurationTypeError(f"api_base_url must be a str URL, got {type(api_base_url).__name__}.")
    if organization is not None and not isinstance(organization, str):
        raise ConfigurationTypeError(f"organization must be a str id or None, got {type(organization).__name__}.")
    if not isinstance(tools_strict, bool):
        raise ConfigurationTypeError(f"tools_strict must be a bool, got {tools_strict!r}.")


def _check_http_client_kwargs(kwargs: Any, http_client: Any, async_http_client: Any) -> None:
    """Check ``http_client_kwargs`` (a dict of str keys); a client given too would make it unused, so that is refused.

    Raises:
        ConfigurationTypeError: Not a dict, or a key that is not a str.
        ConfigurationError: Given together with ``http_client`` or ``async_http_client``.
    """
    if kwargs is None:
        return
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs):
        raise ConfigurationTypeError(
            f"http_client_kwargs must be a dict of httpx.Client keyword arguments, got {type(kwargs).__name__}."
        )
    if kwargs and (http_client is not None or async_http_client is not None):
        raise ConfigurationError(
            "Pass either http_client_kwargs or http_client/async_http_client, not both: the clients given would be "
            "used and the kwargs ignored."
        )


def _kwargs_client(kwargs: dict[str, Any] | None, *, asynchronous: bool) -> Any:
    """An httpx client built from ``http_client_kwargs``, or None (the SDK builds its own)."""
    if not kwargs:
        return None
    try:  # the HTTP library the SDK itself is built on (httpx2 for openai ≥ 3, httpx before)
        library: Any = importlib.import_module("httpx2")
    except ImportError:
        library = importlib.import_module("httpx")
    try:
        return library.AsyncClient(**kwargs) if asynchronous else library.Client(**kwargs)
    except TypeError as exc:
        raise ConfigurationTypeError(f"http_client_kwargs were refused by httpx: {exc}") from exc


def _env_number(name: str, kind: type[float] | type[int], default: float) -> Any:
    """``kind(os.environ[name])``, or ``default`` when unset; a value that is not a number is named."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return kind(default)
    try:
        return kind(text)
    except ValueError:
        raise ConfigurationError(f"The environment variable {name}={text!r} is not a number.") from None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _http_client_classes(name: str) -> tuple[type, ...]:
    """``httpx.<name>`` and ``httpx2.<name>`` where loaded (a client given to us has loaded its library)."""
    found = (getattr(sys.modules.get(module), name, None) for module in ("httpx", "httpx2"))
    return tuple(c for c in found if isinstance(c, type))


def _check_transport(timeout: Any, max_retries: Any, http_client: Any, async_http_client: Any) -> None:
    """Check the generator's init arguments about HTTP (before anything is stored).

    Raises:
        ConfigurationTypeError: For a value of the wrong type (a client that is not an httpx
            client of the right kind included).
        ConfigurationError: For a timeout ≤ 0 or a negative retry count.
    """
    if timeout is not None and not _is_number(timeout):
        raise ConfigurationTypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}.")
    if timeout is not None and timeout <= 0:
        raise ConfigurationError(f"timeout must be a positive number of seconds, got {timeout!r}.")
    if max_retries is not None and (isinstance(max_retries, bool) or not isinstance(max_retries, int)):
        raise ConfigurationTypeError(f"max_retries must be an integer, got {type(max_retries).__name__}.")
    if max_retries is not None and max_retries < 0:
        raise ConfigurationError(f"max_retries must be an integer ≥ 0, got {max_retries!r}.")
    for label, value, kind in (
        ("http_client", http_client, "Client"),
        ("async_http_client", async_http_client, "AsyncClient"),
    ):
        if value is not None and not isinstance(value, _http_client_classes(kind)):
            raise ConfigurationTypeError(f"{label} must be an httpx.{kind}, got {type(value).__name__}.")


async def _closed_with_the_loop(client: AsyncOpenAI, *, own: bool) -> AsyncGenerator[None, None]:
    """Suspended until its event loop shuts down, then closes ``client`` there (a client given to us stays open)."""
    try:
        yield
    finally:
        if own:
            await client.close()
