"""Load a pipeline or an agent that Haystack 2.x saved (``Pipeline.dumps()``, ``Agent.to_dict()``).

:func:`load_haystack` reads the YAML, rewrites every ``haystack.*`` / ``haystack_experimental.*`` dotted path
through :data:`HAYSTACK_TYPES` (an explicit table: component and tool classes, confirmation policies, UIs and
strategies, message types named in routes and state schemas, State merge handlers), refuses a path the table
does not map (naming each one and where it sits) before anything is built, then builds the objects under the
allowlist every file goes through: handrail's own modules plus the ``allowed_modules`` given.

Example:
    >>> from handrail.core.haystack_yaml import HAYSTACK_TYPES
    >>> HAYSTACK_TYPES["haystack.tools.tool.Tool"]
    'handrail.tools.tool.Tool'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from handrail.core._haystack_types import HAYSTACK_TYPES, haystack_paths_in
from handrail.errors import SerializationError

__all__ = ["HAYSTACK_TYPES", "load_haystack", "translate_haystack"]

_PIPELINE_ONLY_KEYS = ("connection_type_validation",)
"""Haystack pipeline keys handrail has no setting for (it always checks connection types)."""


def load_haystack(source: str | os.PathLike[str] | Mapping[str, Any], *, allowed_modules: Iterable[str] = ()) -> Any:
    """Build the pipeline or the component (an Agent, most often) that Haystack 2.x wrote.

    Args:
        source: The YAML text, a path to a YAML file (a ``Path``, or a one-line string ending in ``.yaml``,
            ``.yml`` or ``.json`` or naming an existing file), or the dict already read (``Agent.to_dict()``).
        allowed_modules: Module prefixes trusted besides handrail's, e.g. the module of your tool functions
            (``("myapp.tools",)``); every other dotted path in the file is refused.

    Returns:
        A :class:`~handrail.core.pipeline.Pipeline` when the file has ``components``, else the object its ``type``
        names (e.g. an :class:`~handrail.components.agents.Agent`).

    Raises:
        SerializationError: Invalid YAML; a Haystack path the table does not map (each named, with where it
            sits); a path outside the allowlist; or a component that refuses its parameters (named).
    """
    from handrail.core.pipeline import Pipeline
    from handrail.core.serialization import object_from_dict, restricted_imports

    if isinstance(source, Mapping):
        raw: Any = dict(source)
    elif isinstance(source, os.PathLike):
        raw = _parse(Path(source).read_text(encoding="utf-8"))
    elif isinstance(source, str) and _looks_like_a_path(source):
        try:
            raw = _parse(Path(source).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SerializationError(f"load_haystack: no such file {source!r}.") from None
    elif isinstance(source, str):
        raw = _parse(source)
    else:
        raise SerializationError(f"load_haystack needs YAML text, a path or a dict, got {type(source).__name__}.")
    data = translate_haystack(raw)
    allowed = (allowed_modules,) if isinstance(allowed_modules, str) else tuple(allowed_modules)
    if "components" in data:
        for key in _PIPELINE_ONLY_KEYS:
            data.pop(key, None)
        return Pipeline.from_dict(data, allowed_modules=allowed)
    if not isinstance(data.get("type"), str):
        raise SerializationError(
            "A Haystack file holds a pipeline (with 'components') or one object (with 'type' and "
            f"'init_parameters'); this one has neither: keys {sorted(data)[:10]}."
        )
    with restricted_imports(allowed):
        return object_from_dict(data, allowed_modules=allowed)


_TOP_COMPONENTS = re.compile(r"^components\s*:", re.MULTILINE)
_TOP_TYPE = re.compile(r"^type\s*:\s*['\"]?([\w.]+)", re.MULTILINE)


def _parse(text: str) -> Any:
    """Read the YAML; an error names what the text holds ("Cannot read the agent YAML"), as far as it can tell.

    Raises:
        SerializationError: When the text is not valid YAML (see :func:`~handrail.core._pipeline_io.yaml_load`).
    """
    from handrail.core._pipeline_io import yaml_load

    return yaml_load(text, what=_what_it_holds(text))


def _what_it_holds(text: str) -> str:
    """What a Haystack YAML text holds, read from its raw lines (so it works on text that does not parse).

    Returns:
        ``pipeline`` (a top-level ``components:``), ``agent`` (a top-level ``type: ....Agent``), the class name
        of another top-level ``type``, else ``Haystack``.
    """
    if _TOP_COMPONENTS.search(text):
        return "pipeline"
    match = _TOP_TYPE.search(text)
    if match is None:
        return "Haystack"
    name = match.group(1).rpartition(".")[2]
    return "agent" if name == "Agent" else name


def _looks_like_a_path(text: str) -> bool:
    """A one-line string naming a ``.yaml`` / ``.yml`` / ``.json`` file, or an existing file: not YAML text."""
    if "\n" in text or not text.strip():
        return False
    if text.strip().lower().endswith((".yaml", ".yml", ".json")):
        return True
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long, or a NUL: text, not a path
        return False


def translate_haystack(data: Any) -> Any:
    """Return a copy of Haystack's dict form with every Haystack dotted path replaced by handrail's.

    Tool and Toolset envelopes (``{"type", "data"}``) become ``{"type", "init_parameters"}``. Text that is not
    a dotted path or a type expression (a prompt mentioning Haystack) is left alone.

    Args:
        data: A dict as Haystack's ``to_dict()`` (or the YAML of ``dumps()``) holds it; not modified.

    Returns:
        The translated copy.

    Raises:
        SerializationError: Paths the table does not map, each named with the place it sits
            (``components.agent.init_parameters.streaming_callback``), before anything is built.
    """
    unmapped: list[str] = []
    result = _translate(data, "", unmapped)
    if unmapped:
        shown = "; ".join(unmapped[:20])
        raise SerializationError(
            f"Cannot load this Haystack file: handrail has no counterpart for {shown}. The table is "
            f"handrail.core.haystack_yaml.HAYSTACK_TYPES; replace these in the file or remove them."
        )
    if not isinstance(result, dict):
        raise SerializationError(f"A Haystack file must hold a mapping, got {type(result).__name__}.")
    return result


def _translate(value: Any, where: str, unmapped: list[str]) -> Any:
    if isinstance(value, dict):
        out = {key: _translate(item, f"{where}.{key}" if where else str(key), unmapped) for key, item in value.items()}
        if isinstance(out.get("type"), str) and "init_parameters" not in out and isinstance(out.get("data"), dict):
            out["init_parameters"] = out.pop("data")  # Haystack's Tool / Toolset envelope
        return out
    if isinstance(value, list):
        return [_translate(item, f"{where}[{i}]", unmapped) for i, item in enumerate(value)]
    if isinstance(value, str):
        return _translate_text(value, where, unmapped)
    return value


def _translate_text(text: str, where: str, unmapped: list[str]) -> str:
    for path in sorted(set(haystack_paths_in(text)), key=len, reverse=True):
        mapped = HAYSTACK_TYPES.get(path)
        if mapped is None:
            unmapped.append(f"'{path}' (at {where or 'the top'})")
        else:
            text = text.replace(path, mapped)
    return text
