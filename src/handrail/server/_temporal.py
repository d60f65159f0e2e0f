"""The approval service in front of Temporal runs: its decisions on their approvals go to the workflows as Updates.

The records of a Temporal run's held calls are written by its worker (``create_worker(..., approvals=store)``,
:mod:`handrail.temporal._records`) into the service's store, so the API and the page list them as any other. A
decision on one (``POST /api/v1/approvals/{id}/decision``) is checked as any other (the principal, its role and
tool patterns, ``If-Match``, ``Idempotency-Key``, the allowed decisions, an edit's schema), then
:class:`TemporalDecisions` sends it to the run as the ``decide`` Update, ``decided_by`` the authenticated
principal. The workflow's Update validator is the arbiter: a refusal is answered as the service's refusals are
(409 ``approval-decided`` when the run decided the call otherwise, else 422 ``decision-refused`` with the run's
reason) and nothing is recorded; once accepted, the record is written as decided (or voted: the run counts a
quorum's votes too) by the same compare-and-set as a local run's, and the events follow.

The Temporal client lives on an event loop of its own thread (the routes are synchronous), connected at the first
decision, so the service starts while Temporal is down; an unreachable Temporal answers 503 ``store-unavailable``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from typing import Any

from handrail.dataclasses.approval import Approval, Decision
from handrail.errors import ApprovalClosedError, ApprovalDecisionError, ConfigurationError, StoreError

__all__ = ["TemporalDecisions"]


class _TemporalNotAnswering(StoreError):
    """Temporal did not answer (unreachable, timed out): nothing was decided; the same request again may be."""


class TemporalDecisions:
    """Delivers the approval service's decisions on Temporal runs as their ``decide`` Updates.

    Args:
        address: ``HOST:PORT`` of the Temporal frontend the workers use.
        namespace: Their namespace (a record of another namespace is refused, naming both).
        timeout: Seconds a decision waits for the run to accept or refuse it.
        **connect_options: More ``temporalio.client.Client.connect`` options (``tls``, ``api_key``, ...).
    """

    def __init__(self, address: str, *, namespace: str = "default", timeout: float = 30.0,
                 **connect_options: Any) -> None:  # fmt: skip
        if not isinstance(address, str) or ":" not in address:
            raise ConfigurationError(f"The Temporal address must be HOST:PORT, got {address!r:.80}.")
        try:
            import temporalio  # noqa: F401
        except ImportError as exc:
            raise ConfigurationError("--temporal needs the temporal extra: pip install 'handrail[temporal]'.") from exc
        self.address = address
        self.namespace = namespace
        self.timeout = float(timeout)
        self._options = connect_options
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None

    def _submit(self, coro: Any) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, name="handrail-temporal",
                                                daemon=True)  # fmt: skip
                self._thread.start()
            loop = self._loop
        context = contextvars.copy_context()  # the caller's: its trace context reaches the Update's headers

        async def in_context() -> Any:
            return await asyncio.get_running_loop().create_task(coro, context=context)

        return asyncio.run_coroutine_threadsafe(in_context(), loop).result(self.timeout + 5)

    async def _connected(self) -> Any:
        if self._client is None:
            from temporalio.client import Client

            self._client = await Client.connect(self.address, namespace=self.namespace, **self._options)
        return self._client

    async def _update(self, run_id: str, call_id: str, decision: str, **kwargs: Any) -> dict[str, Any]:
        from handrail.temporal import decide

        client = await self._connected()
        answer: dict[str, Any] = await asyncio.wait_for(decide(client, run_id, call_id, decision, **kwargs),
                                                        self.timeout)  # fmt: skip
        return answer

    def __call__(self, approval: Approval, decision: Decision, *, principal: str, arguments: dict[str, Any] | None,
                 feedback: str | None) -> dict[str, Any]:  # fmt: skip
        """Send the decision; returns the run's answer (``decided``, ``voted`` or ``duplicate``), or raises."""
        from handrail.stores._approval_request import injected_values
        from handrail.temporal import DecisionRefused

        where = approval.extra.get("temporal")
        info: dict[str, Any] = where if isinstance(where, dict) else {}
        namespace = info.get("namespace", self.namespace)
        if namespace != self.namespace:
            raise ApprovalDecisionError(
                f"Approval {approval.id} belongs to a run of Temporal namespace {namespace!r}; this service decides "
                f"those of {self.namespace!r} (--namespace). Nothing was recorded.", approval_id=approval.id,
            )  # fmt: skip
        injected = injected_values(approval)
        edited = None if arguments is None else {k: v for k, v in arguments.items() if k not in injected}
        run_id = str(info.get("workflow_id") or approval.run_id)
        call_id = str(info.get("call_id") or approval.tool_call_id)
        try:
            asked = info.get("asked") if type(info.get("asked")) is int else None  # none in an older worker's record
            update = self._update(run_id, call_id, decision, decided_by=principal, arguments=edited,
                                  feedback=feedback, tool_name=approval.tool_name, asked=asked)  # fmt: skip
            return dict(self._submit(update))
        except DecisionRefused as exc:
            reason = str(getattr(getattr(exc.__cause__, "cause", None), "message", None) or exc)
            if "already decided" in reason:
                raise ApprovalClosedError(
                    f"Approval {approval.id}: its run decided call {call_id} otherwise ({reason}); nothing was "
                    "recorded (the record follows the run's decision).",
                    approval_id=approval.id, current=approval, expected_version=None,
                ) from None  # fmt: skip
            raise ApprovalDecisionError(
                f"Approval {approval.id}: the run refused the decision: {reason}. Nothing was recorded.",
                approval_id=approval.id, errors=({"pointer": "", "message": reason},),
            ) from None  # fmt: skip
        except (TimeoutError, concurrent.futures.TimeoutError) as exc:
            raise _TemporalNotAnswering(
                f"Temporal at {self.address} did not answer the decision on approval {approval.id} within "
                f"{self.timeout:g} s ({type(exc).__name__}); it may still reach the run: send it again."
            ) from None
        except Exception as exc:
            if _ended(exc):
                raise ApprovalClosedError(
                    f"Approval {approval.id}: its run {run_id} has ended; it takes no decision. Nothing was recorded.",
                    approval_id=approval.id, current=approval, expected_version=None,
                ) from None  # fmt: skip
            raise _TemporalNotAnswering(
                f"The decision on approval {approval.id} could not reach Temporal at {self.address}: "
                f"{type(exc).__name__}: {str(exc)[:300]}"
            ) from None

    def close(self) -> None:
        """Close the connection's loop and thread."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=10)
        if loop is not None and not loop.is_running():
            loop.close()  # its self-pipe sockets (else a ResourceWarning when it is collected)


def _ended(exc: BaseException) -> bool:
    """Whether ``exc`` says the workflow is not running (completed, failed, unknown)."""
    from temporalio.service import RPCError, RPCStatusCode

    return isinstance(exc, RPCError) and exc.status == RPCStatusCode.NOT_FOUND
