"""A handrail Temporal worker as a process of its own, for the crash tests (``kill -9`` at a chosen moment).

Usage::

    python -m tests.temporal._worker_main --address HOST:PORT --task-queue Q --ledger sqlite:///L.db \
        --effects EFFECTS --markers DIR --name w1 [--sleep-before S] [--sleep-after S] [--answer-sleep S]

It serves two agents whose scripted model (a function of the conversation, so one agent serves many runs) asks
to pay 5 for the run named in the question (``"pay for RUN_ID"``: call id ``c1``), then answers ``done``:

* ``pay``: the tool ``pay(amount, ref)``, not idempotent: every call appends its effect;
* ``pay_once``: the tool ``pay_once(amount, ref, key: ToolCallId)``, idempotent (it takes a ToolCallId): it
  appends its effect only when the effects file has none for ``ref`` yet.

Every tool call asks a person first (AlwaysAskPolicy). ``ref`` is ``RUN_ID/c1``: the effect's key. An effect is
one line ``REF worker=NAME attempt=N`` appended to ``--effects`` under ``fcntl.flock``. So that a test can kill
the worker at a precise moment, the tool writes a marker file ``started.NAME.REF`` when it starts (then sleeps
``--sleep-before``), ``effect.NAME.REF`` right after the effect (then sleeps ``--sleep-after``), and the model
writes ``answer.NAME.REF`` when it reads the tool's result (then sleeps ``--answer-sleep`` before it answers);
``REF`` has ``/`` replaced by ``_``. The process prints ``ready`` (and writes ``ready.NAME`` in the markers
directory) once its worker polls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from handrail.tools import ToolCallId

_QUESTION = re.compile(r"pay for (\S+)")


def marker_name(event: str, worker: str, ref: str) -> str:
    """The marker file of ``event`` (started / effect / answer) of ``ref`` on ``worker``."""
    return f"{event}.{worker}.{ref.replace('/', '_')}"


def read_effects(path: Path) -> list[str]:
    """The effect keys (``REF``) in the effects file, one per effect, in order."""
    if not path.exists():
        return []
    with path.open() as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        try:
            return [line.split()[0] for line in f if line.strip()]
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _attempt() -> int:
    """The attempt of the activity running this code (0 outside one)."""
    from temporalio import activity

    try:
        return activity.info().attempt
    except RuntimeError:
        return 0


class Knobs:
    def __init__(self, args: argparse.Namespace) -> None:
        self.name: str = args.name
        self.effects = Path(args.effects)
        self.markers = Path(args.markers)
        self.sleep_before: float = args.sleep_before
        self.sleep_after: float = args.sleep_after
        self.answer_sleep: float = args.answer_sleep

    def mark(self, event: str, ref: str) -> None:
        """Write (append: one line per time) the marker of ``event``: the time and the activity's attempt."""
        with (self.markers / marker_name(event, self.name, ref)).open("a") as f:
            f.write(f"{time.time():.3f} attempt={_attempt()}\n")

    def effect(self, ref: str, *, once: bool) -> bool:
        """Append the effect of ``ref`` (with ``once``: unless it is there already); returns whether it did."""
        attempt = _attempt()
        with self.effects.open("a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                if once:
                    f.seek(0)
                    if any(line.split()[:1] == [ref] for line in f):
                        return False
                f.write(f"{ref} worker={self.name} attempt={attempt}\n")
                f.flush()
                os.fsync(f.fileno())
                return True
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def build_agents(knobs: Knobs) -> dict[str, Any]:
    from handrail.components.agents import Agent
    from handrail.dataclasses.chat_message import ChatMessage
    from handrail.human_in_the_loop import AlwaysAskPolicy, BlockingConfirmationStrategy, SimpleConsoleUI
    from handrail.testing import FunctionChatGenerator
    from handrail.testing.builders import call, reply
    from handrail.tools import create_tool_from_function

    def pay(amount: int, ref: str) -> str:
        """Pay (not idempotent: every call pays).

        Args:
            amount: How much.
            ref: The payment's reference.
        """
        knobs.mark("started", ref)
        time.sleep(knobs.sleep_before)
        knobs.effect(ref, once=False)
        knobs.mark("effect", ref)
        time.sleep(knobs.sleep_after)
        return f"paid {amount} ({ref})"

    def pay_once(amount: int, ref: str, key: ToolCallId) -> str:
        """Pay once per reference (idempotent: a second call with the same reference pays nothing).

        Args:
            amount: How much.
            ref: The payment's reference.
            key: The call's idempotency key.
        """
        knobs.mark("started", ref)
        time.sleep(knobs.sleep_before)
        paid = knobs.effect(ref, once=True)
        knobs.mark("effect", ref)
        time.sleep(knobs.sleep_after)
        return f"paid {amount} ({ref}, key {key})" if paid else f"already paid ({ref}, key {key})"

    def model(tool: str) -> Any:
        def answer(messages: list[ChatMessage], tools: Any) -> ChatMessage:
            found = next((_QUESTION.search(m.text or "") for m in messages if m.role.value == "user"), None)
            run = found.group(1) if found else "unknown"
            ref = f"{run}/c1"
            if not any(m.role.value == "tool" for m in messages):
                return reply(call(tool, {"amount": 5, "ref": ref}, id="c1"))
            knobs.mark("answer", ref)
            time.sleep(knobs.answer_sleep)
            return reply("done")

        return answer

    def strategy() -> BlockingConfirmationStrategy:
        return BlockingConfirmationStrategy(confirmation_policy=AlwaysAskPolicy(), confirmation_ui=SimpleConsoleUI())

    def agent(name: str, function: Any) -> Any:
        def make() -> Agent:
            return Agent(chat_generator=FunctionChatGenerator(model(name)), tools=[create_tool_from_function(function)],
                         confirmation_strategies={name: strategy()})  # fmt: skip

        return make

    return {"pay": agent("pay", pay), "pay_once": agent("pay_once", pay_once)}


async def main(argv: list[str]) -> None:
    from handrail import temporal as ht

    parser = argparse.ArgumentParser(prog="python -m tests.temporal._worker_main")
    parser.add_argument("--address", required=True)
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--ledger", required=True)
    parser.add_argument("--effects", required=True)
    parser.add_argument("--markers", required=True)
    parser.add_argument("--name", default=f"w{os.getpid()}")
    parser.add_argument("--sleep-before", type=float, default=0.0)
    parser.add_argument("--sleep-after", type=float, default=0.0)
    parser.add_argument("--answer-sleep", type=float, default=0.0)
    parser.add_argument("--sticky-timeout", type=float, default=1.0)
    args = parser.parse_args(argv)
    knobs = Knobs(args)
    knobs.markers.mkdir(parents=True, exist_ok=True)
    store = ht.open_temporal_store(args.ledger)
    client = await ht.connect(args.address, store)
    worker = ht.create_worker(client, args.task_queue, build_agents(knobs), store, sticky_timeout=args.sticky_timeout)
    async with worker:
        (knobs.markers / f"ready.{knobs.name}").write_text(f"{os.getpid()}\n")
        print("ready", flush=True)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    code = 0
    try:
        asyncio.run(main(sys.argv[1:]))
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    sys.stdout.flush()  # the SDK can abort at interpreter exit (sdk-python #300): leave without finalizers
    sys.stderr.flush()
    os._exit(code)
