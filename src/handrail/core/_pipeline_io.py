"""A pipeline written out: its dict form (and YAML), and its Mermaid drawing."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from handrail.core._pipeline_graph import Graph, describe_type
from handrail.core.component import input_sockets, is_component, output_sockets
from handrail.core.serialization import import_object, object_from_dict, object_to_dict, restricted_imports
from handrail.errors import HandrailError, SerializationError

__all__ = ["PipelineSpec", "graph_to_dict", "mermaid", "read_spec", "yaml_dump", "yaml_load"]


def graph_to_dict(graph: Graph) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Return ``(components, connections)`` in their dict form.

    Raises:
        SerializationError: When a component cannot be serialized; the message names it.
    """
    components: dict[str, Any] = {}
    for name, instance in graph.components.items():
        try:
            components[name] = object_to_dict(instance)
        except SerializationError as exc:
            raise SerializationError(f"Cannot serialize pipeline component '{name}': {exc}") from exc
    return components, [c.to_dict() for c in graph.connections]


@dataclass(frozen=True)
class PipelineSpec:
    """A pipeline's dict form, checked and with its components rebuilt.

    Attributes:
        metadata: The pipeline's metadata.
        max_runs_per_component: The run limit per component.
        components: ``{name: component instance}``, in the order of the dict.
        connections: ``[(sender, receiver)]`` as ``connect`` takes them.
    """

    metadata: dict[str, Any]
    max_runs_per_component: int
    components: dict[str, Any]
    connections: list[tuple[str, str]]


def read_spec(data: Any, allowed_modules: Iterable[str] | None) -> PipelineSpec:
    """Check a pipeline's dict form and rebuild its components (``data`` is not modified).

    Args:
        data: ``{"metadata", "max_runs_per_component", "components": {name: {type, init_parameters}},
            "connections": [{"sender": "a.x", "receiver": "b.y"}]}``.
        allowed_modules: Module prefixes trusted besides ``handrail`` for every type named in ``data``.

    Raises:
        SerializationError: For a malformed dict, or a component whose type is not allowed, cannot be imported,
            refuses its parameters (whatever its ``from_dict`` or constructor raised, chained) or is not a
            component; the message names the component and its type.
    """
    if not isinstance(data, dict):
        raise SerializationError(f"A pipeline must be a mapping, got {type(data).__name__}.")
    known = {"metadata", "max_runs_per_component", "components", "connections", "connection_type_validation"}
    unknown = sorted(set(data) - known)
    if unknown:
        hint = ""
        if any(str(key).startswith("haystack") for key in unknown) or "haystack" in str(data.get("components", "")):
            hint = " A file written by Haystack loads with handrail.core.load_haystack."
        raise SerializationError(f"Unknown pipeline keys {unknown}.{hint}")
    if data.get("connection_type_validation", True) is not True:
        raise SerializationError(
            "connection_type_validation: handrail always checks connection types; only true (or no key) is read."
        )
    metadata = _or_empty(data.get("metadata"), dict)
    max_runs = data.get("max_runs_per_component", 100)
    if not isinstance(metadata, dict):
        raise SerializationError(f"A pipeline's 'metadata' must be a mapping, got {type(metadata).__name__}.")
    if not isinstance(max_runs, int) or isinstance(max_runs, bool) or max_runs < 1:
        raise SerializationError(f"A pipeline's 'max_runs_per_component' must be an integer ≥ 1, got {max_runs!r:.50}.")
    allowed = None
    if allowed_modules is not None:
        allowed = tuple([allowed_modules] if isinstance(allowed_modules, str) else allowed_modules)
    return PipelineSpec(
        metadata=copy.deepcopy(metadata),
        max_runs_per_component=max_runs,
        components=_read_components(_or_empty(data.get("components"), dict), allowed),
        connections=_read_connections(_or_empty(data.get("connections"), list)),
    )


def _or_empty(value: Any, kind: type) -> Any:
    """An empty YAML key (``components:``) reads as None: treat it as empty."""
    return kind() if value is None else value


def _read_components(components: Any, allowed: tuple[str, ...] | None) -> dict[str, Any]:
    if not isinstance(components, dict):
        raise SerializationError(f"A pipeline's 'components' must be a mapping, got {type(components).__name__}.")
    built: dict[str, Any] = {}
    with restricted_imports(allowed) if allowed is not None else contextlib.nullcontext():
        for name, spec in components.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            if not isinstance(kind, str):
                raise SerializationError(
                    f"Pipeline component '{name}' must be a mapping with a 'type' (and 'init_parameters'), "
                    f"got {spec!r:.200}."
                )
            try:
                cls = import_object(kind, allowed_modules=allowed)
                if not (isinstance(cls, type) and is_component(cls)):  # checked before anything is built
                    raise SerializationError(f"'{kind}' is not a component class (a class decorated with @component)")
                instance = object_from_dict(spec, allowed_modules=allowed)
            except (Exception, SystemExit) as exc:  # whatever its from_dict or constructor raises (not Ctrl-C), named
                detail = str(exc) if isinstance(exc, HandrailError) else f"{type(exc).__name__}: {exc}"
                raise SerializationError(
                    f"Cannot load pipeline component '{name}' of type '{kind}': {detail:.1000}"
                ) from exc
            if isinstance(instance, type) or not is_component(instance):
                raise SerializationError(
                    f"Cannot load pipeline component '{name}': its type '{kind}' built a "
                    f"{type(instance).__name__}, which is not a component (a class decorated with @component)."
                )
            built[name] = instance
    return built


def _read_connections(connections: Any) -> list[tuple[str, str]]:
    if not isinstance(connections, list):
        raise SerializationError(f"A pipeline's 'connections' must be a list, got {type(connections).__name__}.")
    pairs: list[tuple[str, str]] = []
    for entry in connections:
        if not (
            isinstance(entry, dict) and isinstance(entry.get("sender"), str) and isinstance(entry.get("receiver"), str)
        ):
            raise SerializationError(
                f"A pipeline connection must be {{'sender': 'a.x', 'receiver': 'b.y'}}, got {entry!r:.200}."
            )
        pairs.append((entry["sender"], entry["receiver"]))
    return pairs


def yaml_dump(data: dict[str, Any]) -> str:
    """Write a pipeline's dict form as YAML (``yaml.safe_dump``, keys in their order).

    Raises:
        SerializationError: When a value is not plain YAML data; the message names the component.
    """
    import yaml  # imported on first use: keeps `import handrail` fast

    try:
        text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError as exc:
        culprit = next((n for n, c in data.get("components", {}).items() if not _yaml_safe(c)), None)
        where = f"component '{culprit}'" if culprit is not None else "its metadata"
        raise SerializationError(
            f"Cannot write the pipeline as YAML: {where} holds a value YAML cannot represent: {exc}"
        ) from exc
    return text


def _yaml_safe(value: Any) -> bool:
    import yaml

    try:
        yaml.safe_dump(value)
    except yaml.YAMLError:
        return False
    return True


def yaml_load(text: str, *, what: str) -> Any:
    """Parse YAML text like ``yaml.safe_load`` (no Python object tags), refusing duplicate keys and alias bombs.

    Args:
        text: The YAML text.
        what: What the text holds, as the error names it: ``"pipeline"`` gives "Cannot read the pipeline YAML".

    Raises:
        SerializationError: When the text is not valid YAML, gives a key twice in one mapping, or uses
            aliases that expand it too far (see :func:`handrail.core._yaml.safe_load_yaml`); the message
            names the line.
    """
    import yaml

    from handrail.core._yaml import YamlRefusedError, describe_yaml_error, safe_load_yaml

    try:
        return safe_load_yaml(text)[0]
    except YamlRefusedError as exc:
        line, problem = describe_yaml_error(exc)
        where = f"line {line}: " if line is not None else ""
        raise SerializationError(f"Cannot read the {what} YAML: {where}{problem}") from exc
    except yaml.YAMLError as exc:
        raise SerializationError(f"Cannot read the {what} YAML: {exc}") from exc


def _escape(text: str) -> str:
    return text.replace("&", "#amp;").replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def mermaid(graph: Graph) -> str:
    """Draw the pipeline as a Mermaid flowchart.

    Components are boxes (name and class); each connection is an edge labelled with the two sockets and the
    sender's type (dotted when the input is optional); the unconnected mandatory inputs come from an ``input``
    node (optional ones left unconnected are not drawn) and the unconnected outputs go to an ``output`` node.

    Returns:
        The Mermaid source, ending with a newline.
    """
    ids = {name: f"c{index}" for index, name in enumerate(graph.components)}
    lines = ["flowchart TD"]
    for name, instance in graph.components.items():
        lines.append(f'    {ids[name]}["<b>{_escape(name)}</b><br/><small>{_escape(type(instance).__name__)}</small>"]')
    for c in graph.connections:
        out_type = output_sockets(graph.components[c.sender])[c.sender_socket].type
        optional = not input_sockets(graph.components[c.receiver])[c.receiver_socket].is_mandatory
        label = _escape(f"{c.sender_socket} → {c.receiver_socket}: {describe_type(out_type)}")
        arrow = f'-. "{label}" .->' if optional else f'-- "{label}" -->'
        lines.append(f"    {ids[c.sender]} {arrow} {ids[c.receiver]}")
    lines.extend(_open_ends(graph, ids))
    return "\n".join(lines) + "\n"


def _open_ends(graph: Graph, ids: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for name, instance in graph.components.items():
        connected = graph.connected_inputs(name)
        for socket in input_sockets(instance).values():
            if socket.is_mandatory and socket.name not in connected:
                label = _escape(f"{socket.name}: {describe_type(socket.type)}")
                lines.append(f'    pipeline_input([input]) -- "{label}" --> {ids[name]}')
        used = graph.connected_outputs(name)
        for out in output_sockets(instance).values():
            if out.name not in used:
                label = _escape(f"{out.name}: {describe_type(out.type)}")
                lines.append(f'    {ids[name]} -- "{label}" --> pipeline_output([output])')
    return lines
