"""Haystack's ``haystack.utils`` names, where Haystack code imports them from: ``from handrail.utils import Secret``.

Each name is handrail's own (the same object as in :mod:`handrail.core`); this package only gives Haystack code
its import path. :func:`deserialize_secrets_inplace` is the one helper written here.
"""

import typing as _typing

from handrail.core._lazy import lazy_exports as _lazy_exports

__all__ = [
    "Secret",
    "deserialize_callable",
    "deserialize_secrets_inplace",
    "deserialize_type",
    "serialize_callable",
    "serialize_type",
]

_EXPORTS = {
    "Secret": "handrail.core.secret",
    "deserialize_callable": "handrail.core.serialization",
    "deserialize_secrets_inplace": "handrail.utils._secrets",
    "deserialize_type": "handrail.core.serialization",
    "serialize_callable": "handrail.core.serialization",
    "serialize_type": "handrail.core.serialization",
}

if _typing.TYPE_CHECKING:
    from handrail.core.secret import Secret
    from handrail.core.serialization import deserialize_callable, deserialize_type, serialize_callable, serialize_type
    from handrail.utils._secrets import deserialize_secrets_inplace

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS, globals(), __all__)
