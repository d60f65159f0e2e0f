"""An approval that waits an hour: a durable timer on a time-skipping dev server (no worker waits for it)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment

from handrail import temporal as ht
from handrail.temporal._codec import ClaimCheckCodec
from tests.temporal._harness import Effects, asking, transfer_agent
from tests.temporal.conftest import TEMPORAL_BIN


@pytest.fixture
async def skipping(ledger_url: str) -> AsyncIterator[tuple[WorkflowEnvironment, Any]]:
    store = ht.open_temporal_store(ledger_url)
    converter = dataclasses.replace(DataConverter.default, payload_codec=ClaimCheckCodec(store))
    env = await WorkflowEnvironment.start_time_skipping_v2(
        dev_server_existing_path=str(TEMPORAL_BIN), ip="127.0.0.1", data_converter=converter,
        dev_server_extra_args=["--dynamic-config-value", "frontend.WorkflowTimeSkippingEnabled=true"],
    )  # fmt: skip
    try:
        yield env, store
    finally:
        await env.shutdown()
        store.close()


@pytest.mark.parametrize(("on_expiry", "ran"), [("reject", []), ("approve", [("transfer", 5)])])
async def test_an_hour_long_approval_expires_by_its_policy_with_no_worker_waiting(
    skipping: tuple[WorkflowEnvironment, Any], task_queue: str, on_expiry: str, ran: list[Any]
) -> None:
    env, store = skipping
    effects = Effects()
    agent = transfer_agent(effects, strategy=asking(expires_after=timedelta(hours=1), on_expiry=on_expiry))
    async with ht.create_worker(env.client, task_queue, {"demo": agent}, store):
        run_id = await ht.start_run(env.client, "demo", "send 5", task_queue=task_queue)
        handle = env.client.get_workflow_handle(run_id)
        while not (await handle.query("status"))["waiting"]:
            pass
        [waiting] = (await handle.query("status"))["waiting"]
    # the worker is gone: the wait is a timer in the server, not a worker's coroutine
    assert waiting["expires_at"] is not None and effects.done == []
    async with ht.create_worker(env.client, task_queue, {"demo": agent}, store):
        result = await ht.get_result(env.client, run_id)
    assert effects.done == ran
    tool_message = next(m for m in result["messages"] if m["role"] == "tool")
    if on_expiry == "reject":
        assert "the approval request expired (no one decided in time)" in str(tool_message)
    else:
        assert "sent 5 to bob" in str(tool_message)
