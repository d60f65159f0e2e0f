"""The client's errors name what was wrong: an unknown run, an unreachable server, bad options or run ids."""

from __future__ import annotations

from typing import Any

import pytest

from handrail import temporal as ht
from handrail.errors import ConfigurationError
from tests.temporal._harness import Effects, harness, transfer_agent
from tests.temporal.conftest import free_port


async def test_an_unknown_run_is_named(dev_server: Any, ledger_url: str, task_queue: str) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects())}) as h:
        for action in (ht.describe(h.client, "ghost-run"), ht.get_result(h.client, "ghost-run"),
                       ht.decide(h.client, "ghost-run", "c1", "approve", decided_by="alice")):  # fmt: skip
            with pytest.raises(ht.RunNotFoundError, match="No run 'ghost-run'"):
                await action


async def test_an_unreachable_server_is_said_so_within_the_timeout(ledger_url: str) -> None:
    store = ht.open_temporal_store(ledger_url)
    with pytest.raises(ht.TemporalUnavailableError, match=r"Cannot reach the Temporal server at 127\.0\.0\.1"):
        await ht.connect(f"127.0.0.1:{free_port()}", store, connect_timeout=2)
    store.close()


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:port", "http://127.0.0.1:7233", ""])
async def test_a_malformed_address_is_refused_before_connecting(ledger_url: str, address: str) -> None:
    store = ht.open_temporal_store(ledger_url)
    with pytest.raises(ConfigurationError, match="HOST:PORT"):
        await ht.connect(address, store)
    store.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"run_id": ""}, "run_id must be"),
        ({"run_id": "x" * 256}, "run_id must be"),
        ({"run_id": "a\nb"}, "run_id must be"),
        ({"options": ht.RunOptions(unknown_outcome="maybe")}, "unknown_outcome must be"),
        ({"options": ht.RunOptions(heartbeat_seconds=0)}, "heartbeat_seconds must be"),
        ({"options": ht.RunOptions(continue_after_events=10)}, "continue_after_events must be"),
        ({"options": ht.RunOptions(model_attempts=0)}, "model_attempts must be"),
    ],
)
async def test_bad_run_arguments_are_refused_before_anything_starts(
    dev_server: Any, ledger_url: str, task_queue: str, kwargs: dict[str, Any], message: str
) -> None:
    async with harness(dev_server.address, ledger_url, task_queue, {"demo": transfer_agent(Effects())}) as h:
        with pytest.raises(ConfigurationError, match=message):
            await h.start(**kwargs)
        with pytest.raises(ConfigurationError, match="question is empty"):
            await h.start(question="  ")
