"""Shared test configuration: hypothesis profiles.

Locally hypothesis explores freely; under CI (``CI`` set) it is derandomized so a run is repeatable,
and deadlines are off everywhere because the 2-core machines are shared and timing is noisy.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("handrail", deadline=None)
settings.register_profile(
    "handrail-ci",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("handrail-ci" if os.environ.get("CI") else "handrail")
