"""ToolInvoker: runs the tool calls of assistant messages (Haystack 2.x semantics, kept public)."""

from __future__ import annotations

import threading
from typing import Any

from handrail.components.drivers import AsyncDriver, MachineRun, SyncDriver
from handrail.components.tools._context import ToolContext
from handrail.components.tools._step import ToolStepOptions, tool_step
from handrail.core._threads import FreshLockOnCopy
from handrail.core.component import component
from handrail.core.serialization import deserialize_callable, init_parameters, qualified_name, serialize_callable
from handrail.dataclasses.chat_message import ChatMessage, ToolCall
from handrail.dataclasses.state import State
from handrail.dataclasses.streaming import StreamingCallback, is_async_callback
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.tools._lifecycle import aclose_objects, close_objects, objects_to_close, tools_need_warm_up, warm_up_tools
from handrail.tools.tool import Tool
from handrail.tools.toolset import Toolset
from handrail.tools.utils import deserialize_tools, flatten_tools, serialize_tools

__all__ = ["ToolInvoker"]

ToolsArg = list[Tool | Toolset] | Toolset


def _step_run(calls: list[ToolCall], by_name: dict[str, Tool], state: State, opts: ToolStepOptions) -> MachineRun:
    """One tool step as a run: the step's machine and the context that executes its effects."""
    context = ToolContext(by_name, state, opts)
    return MachineRun(tool_step(calls, by_name, state, opts, context.bound), context)


def check_max_workers(value: Any, name: str = "max_workers") -> int:
    """Return ``value`` when it is an int ≥ 1.

    Raises:
        ConfigurationError: Otherwise, naming the parameter.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be an integer of at least 1, got {value!r}.")
    return value


@component
class ToolInvoker(FreshLockOnCopy):
    """Runs the tool calls found in assistant messages and returns one tool message per call.

    Args:
        tools: Tools and Toolsets (or one Toolset); at least one tool, names unique.
        raise_on_failure: Raise on an unknown tool (ToolNotFoundException), invalid arguments or a
            tool exception (ToolInvocationError) instead of returning an error tool result.
        convert_result_to_json_string: JSON-encode every result, strings included (quoted); when False a
            ``str`` result is kept as is and anything else becomes JSON. A tool whose ``outputs_to_string`` sets
            ``raw_result`` gives its result as it is either way: a ``str`` or a list of text and image parts.
        streaming_callback: Receives one chunk per result, then a chunk with finish_reason
            ``"tool_call_results"``.
        enable_streaming_callback_passthrough: Give the callback to tools that declare a
            ``streaming_callback`` parameter.
        max_workers: At most this many tools run at once (threads in ``run``, a semaphore in ``run_async``).
            Under ``run_async`` a sync tool runs in handrail's own thread pool of the event loop (256 threads by
            default, shared by the loop's runs; :func:`handrail.tools.set_tool_thread_limit`).

    Raises:
        ConfigurationError: No tools, duplicate names, or ``max_workers`` < 1.
        ConfigurationTypeError: A tool that is not a Tool or Toolset, a callback that is not
            callable, or a flag that is not a bool.

    Examples:
        >>> def weather(city: str) -> str:
        ...     return f"sunny in {city}"
        >>> t = Tool(name="weather", description="", function=weather,
        ...          parameters={"type": "object", "properties": {"city": {"type": "string"}}})
        >>> call = ToolCall(tool_name="weather", arguments={"city": "Oslo"})
        >>> out = ToolInvoker(tools=[t]).run(messages=[ChatMessage.from_assistant(tool_calls=[call])])
        >>> out["tool_messages"][0].tool_call_result.result
        'sunny in Oslo'
    """

    def __init__(
        self,
        tools: ToolsArg,
        raise_on_failure: bool = True,
        convert_result_to_json_string: bool = False,
        streaming_callback: StreamingCallback | None = None,
        *,
        enable_streaming_callback_passthrough: bool = False,
        max_workers: int = 8,
    ) -> None:
        if not flatten_tools(tools):
            raise ConfigurationError("ToolInvoker requires at least one tool.")
        if streaming_callback is not None and not callable(streaming_callback):
            raise ConfigurationTypeError("streaming_callback must be callable or None.")
        for flag, value in (
            ("raise_on_failure", raise_on_failure),
            ("convert_result_to_json_string", convert_result_to_json_string),
            ("enable_streaming_callback_passthrough", enable_streaming_callback_passthrough),
        ):
            if not isinstance(value, bool):
                raise ConfigurationTypeError(f"ToolInvoker: {flag} must be a bool, got {value!r}.")
        self.tools = tools
        self.raise_on_failure = raise_on_failure
        self.convert_result_to_json_string = convert_result_to_json_string
        self.streaming_callback = streaming_callback
        self.enable_streaming_callback_passthrough = enable_streaming_callback_passthrough
        self.max_workers = check_max_workers(max_workers)
        self._warmed: dict[int, object] = {}
        self._closed: dict[int, object] = {}  # closed by close() and not warmed since
        self._warm_lock = threading.Lock()

    def warm_up(self) -> None:
        """Warm up each toolset (its own ``warm_up()``, before its tools are listed) and each tool, once.

        Idempotent, also when several threads run at once; runs do it automatically. Tools a toolset gained
        since, and tools assigned to ``tools`` later, are warmed by the next call; after :meth:`close`, all are.
        """
        if not tools_need_warm_up(self.tools, self._warmed):
            return
        with self._warm_lock:
            warm_up_tools(self.tools, self._warmed, self._closed)

    def close(self) -> None:
        """Close the toolsets and tools that have a ``close()``, each once (see :meth:`Agent.close`).

        A second close closes nothing; the next run warms them again, and the close after it closes them again.
        """
        close_objects(self._to_close())

    async def aclose(self) -> None:
        """Async twin of :meth:`close`: awaits ``aclose()`` where an object has one, else calls ``close()``."""
        await aclose_objects(self._to_close())

    def _to_close(self) -> list[object]:
        with self._warm_lock:  # taken, not held while closing: an aclose awaits
            return objects_to_close(self.tools, (), self._warmed, self._closed)

    def _prepare(
        self,
        messages: list[ChatMessage],
        state: State | None,
        streaming_callback: StreamingCallback | None,
        passthrough: bool | None,
        tools: ToolsArg | None,
        is_async: bool,
    ) -> tuple[list[ToolCall], dict[str, Tool], State, ToolStepOptions]:
        if not isinstance(messages, list) or not all(isinstance(m, ChatMessage) for m in messages):
            raise ConfigurationTypeError("ToolInvoker.run needs messages: list[ChatMessage].")
        callback = streaming_callback or self.streaming_callback
        if callback is not None and not is_async and is_async_callback(callback):
            raise ConfigurationTypeError("ToolInvoker.run needs a sync streaming callback; use run_async for async.")
        if tools is None:
            self.warm_up()
        else:
            warm_up_tools(tools, {})  # this run's own tools: every run (warm_up is idempotent)
        flat = flatten_tools(tools if tools is not None else self.tools)
        by_name = {t.name: t for t in flat}
        # The caller owns the assistant message, so results answer the calls exactly as given (origin == call);
        # only the Agent, which writes the history, gives a missing or repeated id a unique one.
        calls = [c for m in messages for c in m.tool_calls]
        opts = ToolStepOptions(
            raise_on_failure=self.raise_on_failure,
            convert_result_to_json_string=self.convert_result_to_json_string,
            max_workers=self.max_workers,
            streaming_callback=callback,
            passthrough=self.enable_streaming_callback_passthrough if passthrough is None else passthrough,
        )
        return calls, by_name, state if state is not None else State(), opts

    @component.output_types(tool_messages=list[ChatMessage], state=State)
    def run(
        self,
        messages: list[ChatMessage],
        state: State | None = None,
        streaming_callback: StreamingCallback | None = None,
        *,
        enable_streaming_callback_passthrough: bool | None = None,
        tools: ToolsArg | None = None,
    ) -> dict[str, Any]:
        """Run every tool call in ``messages``.

        Args:
            messages: Messages; the tool calls of all of them run (other messages are ignored).
            state: The State tools read and write; a fresh empty one when None.
            streaming_callback: Overrides the init callback for this run (sync).
            enable_streaming_callback_passthrough: Overrides the init setting when not None.
            tools: Overrides the init tools for this run.

        Returns:
            ``{"tool_messages": [tool-role ChatMessage per call, in call order], "state": State}``.

        Raises:
            ToolNotFoundException: Unknown tool, in raise mode.
            ToolInvocationError: Invalid arguments or a failing tool, in raise mode.
            ConfigurationTypeError: Bad ``messages`` or an async callback.
        """
        calls, by_name, run_state, opts = self._prepare(
            messages, state, streaming_callback, enable_streaming_callback_passthrough, tools, is_async=False
        )
        if not calls:
            return {"tool_messages": [], "state": run_state}
        return {"tool_messages": SyncDriver().drive(_step_run(calls, by_name, run_state, opts)), "state": run_state}

    async def run_async(
        self,
        messages: list[ChatMessage],
        state: State | None = None,
        streaming_callback: StreamingCallback | None = None,
        *,
        enable_streaming_callback_passthrough: bool | None = None,
        tools: ToolsArg | None = None,
    ) -> dict[str, Any]:
        """Async twin of :meth:`run`; async tools are awaited, sync ones run in worker threads."""
        calls, by_name, run_state, opts = self._prepare(
            messages, state, streaming_callback, enable_streaming_callback_passthrough, tools, is_async=True
        )
        if not calls:
            return {"tool_messages": [], "state": run_state}
        messages = await AsyncDriver().drive(_step_run(calls, by_name, run_state, opts))
        return {"tool_messages": messages, "state": run_state}

    def to_dict(self) -> dict[str, Any]:
        """Serialize to the ``{type, init_parameters}`` envelope."""
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "tools": serialize_tools(self.tools),
                "raise_on_failure": self.raise_on_failure,
                "convert_result_to_json_string": self.convert_result_to_json_string,
                "streaming_callback": serialize_callable(self.streaming_callback) if self.streaming_callback else None,
                "enable_streaming_callback_passthrough": self.enable_streaming_callback_passthrough,
                "max_workers": self.max_workers,
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolInvoker:
        """Rebuild from :meth:`to_dict` output (``data`` is not modified)."""
        params = init_parameters(data, cls)
        params["tools"] = deserialize_tools(params["tools"])
        if params.get("streaming_callback"):
            params["streaming_callback"] = deserialize_callable(
                params["streaming_callback"], where="streaming_callback"
            )
        return cls(**params)
