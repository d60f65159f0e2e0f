"""Core machinery: serialization helpers, secrets, and loading what Haystack 2.x saved.

Objects serialize to the ``{type, init_parameters}`` envelope; :func:`load_haystack` builds a pipeline or an
agent from Haystack 2.x's YAML.
"""

from handrail.core.haystack_yaml import HAYSTACK_TYPES, load_haystack
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
    "HAYSTACK_TYPES",
    "Secret",
    "default_from_dict",
    "default_to_dict",
    "deserialize_callable",
    "deserialize_type",
    "import_object",
    "load_haystack",
    "object_from_dict",
    "object_to_dict",
    "qualified_name",
    "serialize_callable",
    "serialize_type",
]
