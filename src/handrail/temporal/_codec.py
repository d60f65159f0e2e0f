"""Claim check: payloads over a size limit travel by reference to the store, not in the workflow's history.

Temporal warns at 256 KB per payload and fails at 2 MB, and terminates a history at 50 MB. An agent's
conversation goes into every model call, so a long run would cross those limits. :class:`ClaimCheckCodec` keeps
each payload larger than ``threshold`` bytes in the store (:class:`~handrail.temporal._store.TemporalStore`,
keyed by its SHA-256) and puts a small reference payload in its place; decoding reads it back and checks the
digest. Clients and workers of one deployment must use the same store (the codec is part of their data
converter: :func:`handrail.temporal.connect` and the worker set it up).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from handrail.errors import ConfigurationError

if TYPE_CHECKING:
    from handrail.temporal._store import TemporalStore

__all__ = ["DEFAULT_THRESHOLD", "ClaimCheckCodec"]

DEFAULT_THRESHOLD = 128 * 1024
"""Payloads over 128 KB go to the store (Temporal warns at 256 KB)."""
_ENCODING = b"handrail/claim-check"


class ClaimCheckCodec(PayloadCodec):
    """Keep payloads over ``threshold`` bytes in ``store``; the history holds their digest."""

    def __init__(self, store: TemporalStore, threshold: int = DEFAULT_THRESHOLD) -> None:
        if type(threshold) is not int or threshold < 1024:
            raise ConfigurationError(
                f"The claim-check threshold must be an int of at least 1024 bytes, got {threshold!r}."
            )
        self.store = store
        self.threshold = threshold

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.ByteSize() <= self.threshold:
                out.append(payload)
                continue
            data = payload.SerializeToString()
            digest = hashlib.sha256(data).hexdigest()
            await asyncio.to_thread(self.store.put_blob, digest, data)
            out.append(Payload(metadata={"encoding": _ENCODING}, data=digest.encode()))
        return out

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        out = []
        for payload in payloads:
            if payload.metadata.get("encoding") != _ENCODING:
                out.append(payload)
                continue
            digest = payload.data.decode()
            data = await asyncio.to_thread(self.store.get_blob, digest)
            if data is None or hashlib.sha256(data).hexdigest() != digest:
                raise ConfigurationError(
                    f"A payload kept by reference ({digest[:16]}...) is missing from {self.store!r} or damaged: "
                    "clients and workers must use the same --store."
                )
            restored = Payload()
            restored.ParseFromString(data)
            out.append(restored)
        return out
