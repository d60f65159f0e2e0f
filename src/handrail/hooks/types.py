"""The hook points and the :class:`Hook` protocol.

A hook is an object with ``run(state)`` that the Agent calls at one of six points of a run,
with the run's :class:`~handrail.dataclasses.state.State`. It reads and changes State:
``state.data["messages"]`` is the live history, ``state.data["stop_run"] = "reason"`` asks the
run to stop, ``state.data["continue_run"] = True`` (at ``on_exit``) asks it to go on. After each
hook the Agent checks the reserved keys it may have broken (``messages`` a list of ChatMessage,
``stop_run`` None or a non-empty str, ``continue_run`` a bool, ...) and raises a ``RunError``
naming the hook otherwise.
"""

from __future__ import annotations

import typing
from typing import Literal, Protocol, runtime_checkable

from handrail.dataclasses.state import State

__all__ = ["HOOK_POINTS", "Hook", "HookPoint"]

HookPoint = Literal["before_run", "before_llm", "before_tool", "after_tool", "on_exit", "after_run"]
"""Where in a run a hook is called.

- ``before_run``: once, before the first step (the input history is in ``messages``).
- ``before_llm``: before each model call; ``messages`` is the next model input (system message first).
- ``before_tool``: before the calls of a step run; the last message holds the pending calls.
- ``after_tool``: after they ran; the step's results follow the last assistant message with calls.
- ``on_exit``: when an exit condition holds; ``continue_run = True`` asks for another step.
- ``after_run``: once, when the run ended on an exit condition (text, exit tool, ``max_agent_steps``,
  a ``stop_run`` ...); not when the run raised or paused. A stop asked here is ignored.
"""

HOOK_POINTS: tuple[HookPoint, ...] = typing.get_args(HookPoint)
"""The six hook points, in the order a run reaches them."""


@runtime_checkable
class Hook(Protocol):
    """An object the Agent calls at a hook point.

    Only ``run`` is required; it must be sync (an ``async def run`` would never be awaited, and is
    refused when the Agent is built). A hook may also define:

    - ``async run_async(state)``: preferred by async runs (else ``run`` is used); it must be a
      coroutine function (``async def``);
    - ``warm_up()`` and ``close()``: called once per run and per object, even when the same
      object sits at several points;
    - ``to_dict()`` / ``from_dict(data)``: the ``{"type", "init_parameters"}`` envelope, needed to
      serialize an Agent holding the hook;
    - ``allowed_hook_points``: a class attribute listing the points the hook may be placed at
      (every point when absent); a placement elsewhere is refused when the Agent is built.

    Write a function hook with :func:`~handrail.hooks.function_hook.hook` instead of a class when
    you need none of these.

    Examples:
        >>> class StopAfterThreeSteps:
        ...     allowed_hook_points = ("before_llm",)
        ...
        ...     def run(self, state: State) -> None:
        ...         if state.data["step_count"] >= 3:
        ...             state.data["stop_run"] = "three_steps"
        >>> state = State()
        >>> state.data["step_count"] = 3
        >>> StopAfterThreeSteps().run(state)
        >>> state.data["stop_run"], isinstance(StopAfterThreeSteps(), Hook)
        ('three_steps', True)
    """

    def run(self, state: State) -> None:
        """Read and change the run's State.

        Args:
            state: The live State of the run.
        """
        ...
