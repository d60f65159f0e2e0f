"""Conformance suites for store backends, written once and reused by every backend's tests.

Each suite is a mixin of ``test_*`` methods: subclass it in a test module (as ``Test...``) and implement
``make_store``; pytest then runs the whole suite against that backend, the way LangGraph's checkpoint
conformance suite and Haystack's document store test mixins work. The suites need pytest, so they are
imported on first use.

- :class:`ApprovalStoreSuite` (:mod:`handrail.testing.store_suites.approvals`)
- :class:`ChatMessageStoreSuite` (:mod:`handrail.testing.store_suites.chat`)
- :class:`MemoryStoreSuite` (:mod:`handrail.testing.store_suites.memory`)
- :class:`ServiceStoreSuite` (:mod:`handrail.testing.store_suites.service`)
- :class:`SnapshotStoreSuite` (:mod:`handrail.testing.store_suites.snapshots`)

Example::

    from handrail.stores.chat_sqlite import SQLiteChatMessageStore
    from handrail.testing.store_suites import ChatMessageStoreSuite

    class TestMyStore(ChatMessageStoreSuite):
        def make_store(self, *, store_system_messages=False):
            return SQLiteChatMessageStore(":memory:", store_system_messages=store_system_messages)
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

_EXPORTS = {
    "ApprovalStoreSuite": "handrail.testing.store_suites.approvals",
    "ChatMessageStoreSuite": "handrail.testing.store_suites.chat",
    "MemoryStoreSuite": "handrail.testing.store_suites.memory",
    "ServiceStoreSuite": "handrail.testing.store_suites.service",
    "SnapshotStoreSuite": "handrail.testing.store_suites.snapshots",
}

if _typing.TYPE_CHECKING:
    from handrail.testing.store_suites.approvals import ApprovalStoreSuite
    from handrail.testing.store_suites.chat import ChatMessageStoreSuite
    from handrail.testing.store_suites.memory import MemoryStoreSuite
    from handrail.testing.store_suites.service import ServiceStoreSuite
    from handrail.testing.store_suites.snapshots import SnapshotStoreSuite

__all__ = [
    "ApprovalStoreSuite",
    "ChatMessageStoreSuite",
    "MemoryStoreSuite",
    "ServiceStoreSuite",
    "SnapshotStoreSuite",
]

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
