"""Public test helpers: fake chat models, message builders, and run recordings replayed as regression tests.

The fake models are scripted, computed by a function, or replay a recording (:class:`ReplayChatGenerator`);
:func:`replay` runs an agent again on a recording and reports the first divergence.

Store conformance suites are in :mod:`handrail.testing.store_suites`.
"""

from handrail.testing._recording_format import RecordedRun, Recording, read_recording
from handrail.testing._replay_report import ReplayDivergence, ReplayResult
from handrail.testing._replaying import ReplayChatGenerator, replay
from handrail.testing.builders import call, reply, tool_reply, user
from handrail.testing.function_generator import FunctionChatGenerator
from handrail.testing.scripted import ScriptedChatGenerator

__all__ = [
    "FunctionChatGenerator",
    "RecordedRun",
    "Recording",
    "ReplayChatGenerator",
    "ReplayDivergence",
    "ReplayResult",
    "ScriptedChatGenerator",
    "call",
    "read_recording",
    "replay",
    "reply",
    "tool_reply",
    "user",
]
