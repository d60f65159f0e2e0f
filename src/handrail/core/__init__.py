"""Core machinery: serialization helpers (the ``{type, init_parameters}`` envelope) and secrets."""

from handrail.core.secret import Secret
from handrail.core.serialization import (
    default_from_dict,
    default_to_dict,
    deserialize_callable,
    deserialize_type,
    import_object,
    object_from_dict,
    object_to_dict,
    qualified_name,
    serialize_callable,
    serialize_type,
)

__all__ = [
    "Secret",
    "default_from_dict",
    "default_to_dict",
    "deserialize_callable",
    "deserialize_type",
    "import_object",
    "object_from_dict",
    "object_to_dict",
    "qualified_name",
    "serialize_callable",
    "serialize_type",
]
