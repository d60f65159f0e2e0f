"""The graph of a pipeline: named components, their connections, and how ``connect`` picks the sockets."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from handrail.core.component import InputSocket, OutputSocket, input_sockets, output_sockets, types_compatible
from handrail.errors import ComponentError

__all__ = ["Connection", "Graph", "describe_type", "parse_endpoint"]

_MODULE_PREFIX = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


def describe_type(tp: Any) -> str:
    """Return a short, readable name for a socket type: ``str``, ``list[ChatMessage]``, ``int | None``."""
    if tp is Any:
        return "Any"
    if tp is None or tp is type(None):
        return "None"
    if isinstance(tp, type) and not hasattr(tp, "__origin__"):
        return tp.__name__
    return _MODULE_PREFIX.sub(r"\1", str(tp))


def parse_endpoint(text: Any, role: str) -> tuple[str, str | None]:
    """Split ``"component.socket"`` (or a bare ``"component"``) into its two parts.

    Args:
        text: What the caller gave ``connect``.
        role: ``"sender"`` or ``"receiver"``, for the error message.

    Returns:
        ``(component name, socket name or None)``.

    Raises:
        ComponentError: When ``text`` is not a string of the form ``"name"`` or ``"name.socket"``.
    """
    if not isinstance(text, str) or not text or text.count(".") > 1 or text.startswith(".") or text.endswith("."):
        raise ComponentError(
            f"Cannot connect: the {role} {text!r} is not of the form 'component' or 'component.socket'."
        )
    name, _, socket = text.partition(".")
    return name, socket or None


@dataclass(frozen=True)
class Connection:
    """One edge of a pipeline: an output socket feeding an input socket.

    Attributes:
        sender: The sending component's name.
        sender_socket: The name of its output socket.
        receiver: The receiving component's name.
        receiver_socket: The name of its input socket.
    """

    sender: str
    sender_socket: str
    receiver: str
    receiver_socket: str

    def to_dict(self) -> dict[str, str]:
        """Return ``{"sender": "a.x", "receiver": "b.y"}``."""
        return {"sender": f"{self.sender}.{self.sender_socket}", "receiver": f"{self.receiver}.{self.receiver_socket}"}

    def __str__(self) -> str:
        return f"'{self.sender}.{self.sender_socket}' -> '{self.receiver}.{self.receiver_socket}'"


@dataclass
class Graph:
    """The components of a pipeline (in the order they were added) and the connections between them."""

    components: dict[str, Any] = field(default_factory=dict)
    """``{name: component instance}``."""
    connections: list[Connection] = field(default_factory=list)
    """Every connection, in the order it was made."""

    def label(self, name: str) -> str:
        """Return ``"'name' (ClassName)"`` for messages."""
        return f"'{name}' ({type(self.components[name]).__name__})"

    def sender_of(self, name: str, socket: str) -> Connection | None:
        """Return the connection feeding input ``socket`` of component ``name``, if any."""
        return next((c for c in self.connections if c.receiver == name and c.receiver_socket == socket), None)

    def connected_inputs(self, name: str) -> set[str]:
        """Return the names of the input sockets of ``name`` that have a sender."""
        return {c.receiver_socket for c in self.connections if c.receiver == name}

    def connected_outputs(self, name: str) -> set[str]:
        """Return the names of the output sockets of ``name`` that feed at least one receiver."""
        return {c.sender_socket for c in self.connections if c.sender == name}

    def receivers(self, name: str, socket: str) -> Iterator[Connection]:
        """Yield the connections leaving output ``socket`` of component ``name``."""
        return (c for c in self.connections if c.sender == name and c.sender_socket == socket)

    def free_inputs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Describe the input sockets without a sender (see ``Pipeline.inputs``)."""
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for name, instance in self.components.items():
            connected = self.connected_inputs(name)
            free: dict[str, dict[str, Any]] = {}
            for socket in input_sockets(instance).values():
                if socket.name in connected:
                    continue
                free[socket.name] = {"type": socket.type, "is_mandatory": socket.is_mandatory}
                if not socket.is_mandatory:
                    free[socket.name]["default_value"] = socket.default
            if free:
                result[name] = free
        return result

    def free_outputs(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Describe the output sockets that feed no connection (see ``Pipeline.outputs``)."""
        result: dict[str, dict[str, dict[str, Any]]] = {}
        for name, instance in self.components.items():
            used = self.connected_outputs(name)
            free = {s.name: {"type": s.type} for s in output_sockets(instance).values() if s.name not in used}
            if free:
                result[name] = free
        return result

    def resolve(self, sender: str, receiver: str) -> Connection:
        """Turn the two sides given to ``connect`` into one connection, inferring left-out sockets.

        A left-out socket is inferred by type: the pair of sockets must be the only compatible one (an input
        that already has a sender is not a candidate; among several candidates, a pair whose two sockets share
        a name wins).

        Args:
            sender: ``"component.output"`` or ``"component"``.
            receiver: ``"component.input"`` or ``"component"``.

        Returns:
            The connection (which may already exist).

        Raises:
            ComponentError: For an unknown component or socket, incompatible types, no or several candidate
                pairs, or an input socket that already has another sender. The message names both components,
                the sockets and their types.
        """
        s_name, s_socket = parse_endpoint(sender, "sender")
        r_name, r_socket = parse_endpoint(receiver, "receiver")
        outputs = self._sockets(s_name, s_socket, output_sockets, "output")
        inputs = self._sockets(r_name, r_socket, input_sockets, "input")
        pairs = [(o, i) for o in outputs for i in inputs if types_compatible(o.type, i.type)]
        if not pairs:
            raise ComponentError(self._incompatible(s_name, outputs, r_name, inputs))
        if r_socket is None:
            pairs = self._free_pairs(pairs, s_name, r_name)
        out, inp = self._pick(pairs, s_name, r_name)
        connection = Connection(s_name, out.name, r_name, inp.name)
        existing = self.sender_of(r_name, inp.name)
        if existing is not None and existing != connection:
            raise ComponentError(
                f"Cannot connect '{s_name}.{out.name}' to '{r_name}.{inp.name}': that input already receives "
                f"from '{existing.sender}.{existing.sender_socket}' (an input socket accepts one sender)."
            )
        return connection

    def _sockets(self, name: str, socket: str | None, read: Any, kind: str) -> list[Any]:
        if name not in self.components:
            known = ", ".join(repr(n) for n in self.components) or "(none)"
            raise ComponentError(
                f"Cannot connect: component named '{name}' not found in the pipeline. Components: {known}."
            )
        sockets: dict[str, Any] = read(self.components[name])
        if socket is None:
            return list(sockets.values())
        if socket not in sockets:
            listed = ", ".join(f"'{s}'" for s in sockets) or "(none)"
            raise ComponentError(
                f"Cannot connect: {self.label(name)} has no {kind} socket '{socket}'. Its {kind} sockets: {listed}."
            )
        return [sockets[socket]]

    def _free_pairs(
        self, pairs: list[tuple[OutputSocket, InputSocket]], s_name: str, r_name: str
    ) -> list[tuple[OutputSocket, InputSocket]]:
        """Keep the pairs whose input has no sender yet; none left but one that is already made: keep that one."""
        free = [(o, i) for o, i in pairs if self.sender_of(r_name, i.name) is None]
        if free:
            return free
        made = [(o, i) for o, i in pairs if Connection(s_name, o.name, r_name, i.name) in self.connections]
        if made:
            return made[:1]
        raise ComponentError(
            f"Cannot connect {self.label(s_name)} to {self.label(r_name)}: every input of "
            f"'{r_name}' that fits already has a sender (an input socket accepts one sender)."
        )

    def _pick(
        self, pairs: list[tuple[OutputSocket, InputSocket]], s_name: str, r_name: str
    ) -> tuple[OutputSocket, InputSocket]:
        if len(pairs) > 1:
            same_name = [(o, i) for o, i in pairs if o.name == i.name]
            if len(same_name) == 1:
                return same_name[0]
            listed = ", ".join(f"'{s_name}.{o.name}' -> '{r_name}.{i.name}'" for o, i in pairs)
            raise ComponentError(
                f"Cannot connect {self.label(s_name)} to {self.label(r_name)}: several sockets fit ({listed}). "
                f"Name the sockets, e.g. connect('{s_name}.{pairs[0][0].name}', '{r_name}.{pairs[0][1].name}')."
            )
        return pairs[0]

    def _incompatible(self, s_name: str, outputs: list[OutputSocket], r_name: str, inputs: list[InputSocket]) -> str:
        outs = ", ".join(f"'{s_name}.{o.name}' ({describe_type(o.type)})" for o in outputs) or "(no output sockets)"
        ins = ", ".join(f"'{r_name}.{i.name}' ({describe_type(i.type)})" for i in inputs) or "(no input sockets)"
        if len(outputs) == 1 and len(inputs) == 1:
            return (
                f"Cannot connect {outs} to {ins}: the types are not compatible "
                f"({self.label(s_name)} -> {self.label(r_name)})."
            )
        return (
            f"Cannot connect {self.label(s_name)} to {self.label(r_name)}: no output fits an input by type. "
            f"Outputs: {outs}; inputs: {ins}."
        )
