"""Agent definitions in YAML: the file format, loading, and building the Agent.

The format is a pydantic model with a published JSON Schema; loading errors name the file,
the line and the field.

Example file (``examples/assistant.yaml``)::

    generator:
      type: llama_cpp        # llama_cpp | openai | a dotted path to a generator class
      model: default         # llama_cpp: default | small | a path to a .gguf file
    tools: [calculator, search]
    system_prompt: You are a helpful assistant.
    max_agent_steps: 8

Dotted paths (generator classes, tools) are imported only under an allowlist: handrail's
own modules plus the prefixes named in the file's ``allowed_modules`` or passed by the
caller (the CLI's ``--allow-module``); nested imports made while building (e.g. a class's
``from_dict``) are held to the same allowlist. A generator type must be a class with
``run``; handrail's own functions cannot become tools. A file that lists modules in
``allowed_modules`` can run their code: read an agent file from someone else before running it.
Relative paths (a ``.gguf`` model, a search ``folder``) are resolved against the file's folder.

``mcp_servers`` lists MCP servers whose tools the agent gets (docs/agent-files.md, "MCP servers"). The command of
a stdio server runs a program, so it is held to an allowlist too: the file's ``allowed_commands`` plus those the
caller passes (the CLI's ``--allow-command``), each matched exactly as written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from handrail.core._yaml import YamlRefusedError, describe_yaml_error, safe_load_yaml
from handrail.errors import ConfigurationError, ConfigurationTypeError
from handrail.specs._confirmation import (
    ENTRY_TAGS,
    WORKFLOW_DECIDES,
    ConfirmationValue,
    RejectingUI,
    asks_a_person,
    default_strategy,
    strategies,
)
from handrail.specs._confirmation import Pause as _Pause
from handrail.specs._errors import SpecError, building
from handrail.specs._mcp import (
    MCP_TAGS,
    MCPServerEntry,
    build_mcp_toolsets,
    check_unique_names,
    commands_option,
    tools_of_servers,
)
from handrail.specs._parts import build_generator, build_tool
from handrail.specs._yaml_lines import line_of

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.components.generators.types import ChatGenerator
    from handrail.human_in_the_loop.types import ConfirmationUI
    from handrail.stores.types import SnapshotStore
    from handrail.tools.tool import Tool
    from handrail.tools.toolset import Toolset

__all__ = ["AgentSpec", "GeneratorSpec", "MCPServerEntry", "RejectingUI", "SpecError", "ToolEntry",
           "agent_spec_json_schema", "build_agent", "build_generator", "check_agent_spec", "load_agent_spec",
           "needs_a_person"]  # fmt: skip


class GeneratorSpec(BaseModel):
    """Which chat model the agent uses."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        "llama_cpp", description="llama_cpp (the default), openai, or a dotted path to a chat generator class."
    )
    model: str | None = Field(
        None, description="llama_cpp: default | small | path to a .gguf file. openai: the model name."
    )
    api_base_url: str | None = Field(None, description="openai: base URL of an OpenAI-compatible server.")
    generation_kwargs: dict[str, Any] | None = Field(None, description="e.g. {max_tokens: 512, temperature: 0}.")
    init_parameters: dict[str, Any] = Field(
        default_factory=dict, description="Further constructor arguments of the generator class."
    )


class ToolEntry(BaseModel):
    """A tool with settings (the plain form is just its name or dotted path)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="calculator, search, or a dotted path to a Tool or function.")
    folder: str | None = Field(None, description="search: folder of .md/.txt files (relative to the agent file).")
    top_k: int | None = Field(None, ge=1, le=20, strict=True, description="search: passages returned per query.")


class AgentSpec(BaseModel):
    """An agent definition file."""

    model_config = ConfigDict(extra="forbid")

    generator: GeneratorSpec = Field(default_factory=lambda: GeneratorSpec())
    tools: list[str | ToolEntry] = Field(default_factory=list, description="Built-in names or dotted paths.")
    system_prompt: str | None = None
    exit_conditions: list[str] = Field(default_factory=lambda: ["text"], min_length=1)
    max_agent_steps: int = Field(10, ge=1, le=1000, strict=True)  # strict: `true` is not 1
    confirmation: dict[str, ConfirmationValue] = Field(
        default_factory=dict,
        description="Per tool name (or '*'): ask a person before every call (always), never, or once per "
        "distinct argument set (once); or a mapping: ask_when (a rule over the arguments, e.g. 'amount > 100'), "
        "quorum, quorum_when, initiator_may_approve, allowed_decisions, description, expires_after_seconds, "
        "on_expiry.",
    )
    allowed_modules: list[str] = Field(
        default_factory=list, description="Module prefixes whose dotted paths this file may import."
    )
    mcp_servers: list[MCPServerEntry] = Field(
        default_factory=list,
        description="MCP servers whose tools the agent gets: each a name and a command to run (stdio) or a url "
        "(streamable HTTP), with the toolset's settings.",
    )
    allowed_commands: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list,
        description="Programs a stdio MCP server of this file may run (its command, exactly as written).",
    )
    _source: tuple[str, Any] | None = PrivateAttr(None)
    """``(file, composed YAML document)`` when read by :func:`load_agent_spec`: errors found later name the line."""

    def where(self, *location: str | int) -> str:
        """``"FILE:LINE: "`` of the field at ``location`` when the spec came from a file, else ``""``."""
        if self._source is None:
            return ""
        file, root = self._source
        return f"{file}:{line_of(root, location) or 1}: "

    def folder(self) -> Path:
        """The folder of the file :func:`load_agent_spec` read this spec from (absolute); else ``Path(".")``."""
        return Path(self._source[0]).resolve().parent if self._source is not None else Path(".")

    @model_validator(mode="after")
    def _unique_servers(self) -> AgentSpec:
        check_unique_names(self.mcp_servers)
        return self


def agent_spec_json_schema() -> dict[str, Any]:
    """Return the JSON Schema (Draft 2020-12) of agent files."""
    schema = AgentSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "handrail agent file"
    return schema


_UNION_TAGS = ("str", "ToolEntry", *ENTRY_TAGS, *MCP_TAGS)
"""The names pydantic puts into an error's location for the member of a union it tried (not fields)."""


def _field_path(loc: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and p in _UNION_TAGS)) or "(root)"


def load_agent_spec(path: str | Path) -> AgentSpec:
    """Read and validate an agent file.

    Args:
        path: The YAML file.

    Returns:
        The validated :class:`AgentSpec`.

    Raises:
        SpecError: The file is missing, is not YAML, or violates the format; the message
            names the file, the line and the field.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{file}: cannot read the agent file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SpecError(f"{file}: the agent file is not UTF-8 text (byte {exc.start}).") from exc
    try:
        data, root = safe_load_yaml(text)
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc)
        where = f"{file}:{line}" if line is not None else str(file)
        what = "" if isinstance(exc, YamlRefusedError) else "not valid YAML: "
        raise SpecError(f"{where}: {what}{problem}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{file}:1: an agent file must be a mapping of fields (generator, tools, ...).")
    try:
        spec = AgentSpec.model_validate(data)
        spec._source = (str(file), root)
        return spec
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            loc = [p for p in error["loc"] if not (isinstance(p, str) and p in _UNION_TAGS)]
            line = line_of(root, loc)
            lines.append(f"{file}:{line if line is not None else 1}: {_field_path(loc)}: {error['msg']}")
        raise SpecError("\n".join(dict.fromkeys(lines))) from None


def _allowed(spec: AgentSpec, extra: Iterable[str]) -> tuple[str, ...]:
    return (*spec.allowed_modules, *extra)


Approve = Literal["ask", "all", "none", "pause", "workflow"]


def needs_a_person(spec: AgentSpec) -> bool:
    """True when some tool of the spec may ask a person.

    That is a policy other than ``never``, or an MCP server (its tools ask unless their hints say read-only) that no
    ``'*': never`` covers.
    """
    everything = spec.confirmation.get("*")
    covered = everything is not None and not asks_a_person({"*": everything})
    return asks_a_person(spec.confirmation) or (bool(spec.mcp_servers) and not covered)


def _pause_settings(
    approve: Approve,
    snapshot_dir: str | Path | None,
    snapshot_store: SnapshotStore | str | None,
    snapshot_metadata: dict[str, Any] | None,
) -> _Pause | None:
    if approve == "workflow":
        if snapshot_dir is not None or snapshot_store is not None or snapshot_metadata is not None:
            raise SpecError("approve='workflow' writes no snapshot (its workflow decides the calls): give no "
                            "snapshot_dir, snapshot_store or snapshot_metadata.")  # fmt: skip
        return _Pause(None, cast("SnapshotStore", WORKFLOW_DECIDES), {})  # the methods a strategy checks; each refuses
    if approve != "pause":
        if snapshot_dir is not None or snapshot_store is not None or snapshot_metadata is not None:
            raise SpecError(
                f"snapshot_dir, snapshot_store and snapshot_metadata apply to approve='pause', not approve={approve!r}."
            )
        return None
    if snapshot_dir is not None and snapshot_store is not None:
        raise SpecError("approve='pause' takes one of snapshot_dir and snapshot_store, not both.")
    if snapshot_dir is None and snapshot_store is None:
        raise SpecError(
            "approve='pause' needs snapshot_dir (the directory paused runs write their snapshots to) or "
            "snapshot_store (a SnapshotStore, or a URL such as 'sqlite:///approvals.db' or 'postgresql://...')."
        )
    if isinstance(snapshot_store, str) and not snapshot_store.strip():
        raise SpecError("snapshot_store is empty; give a SnapshotStore, or a URL such as 'sqlite:///approvals.db'.")
    directory = str(snapshot_dir) if snapshot_dir is not None else None
    return _Pause(directory, snapshot_store, dict(snapshot_metadata or {}))


def build_agent(
    spec: AgentSpec,
    *,
    base_dir: str | Path | None = None,
    allowed_modules: Iterable[str] = (),
    allowed_commands: Iterable[str] = (),
    generator: ChatGenerator | None = None,
    approve: Approve = "ask",
    confirmation_ui: ConfirmationUI | None = None,
    snapshot_dir: str | Path | None = None,
    snapshot_store: SnapshotStore | str | None = None,
    snapshot_metadata: dict[str, Any] | None = None,
) -> Agent:
    """Build the Agent a spec describes.

    Args:
        spec: The validated spec.
        base_dir: Folder that relative paths in the spec (a tool's ``folder``, a server's ``cwd``, a generator's
            files) are resolved against; None: the folder of the file :func:`load_agent_spec` read the spec from
            (the working directory for a spec not read from a file).
        allowed_modules: Module prefixes trusted besides handrail's own and the file's ``allowed_modules``.
        allowed_commands: Programs a stdio MCP server may run besides those of the file's ``allowed_commands``
            (each exactly as an entry's ``command`` writes it).
        generator: A chat generator to use instead of the spec's (e.g. chosen on the command line).
        approve: For tools with a ``confirmation`` policy: ``ask`` a person (through ``confirmation_ui``,
            default a RichConsoleUI), run ``all`` calls without asking, reject (``none``) every call
            the policy would ask about, or ``pause`` the run for a later decision: tools whose policy is
            ``always`` or ``once`` get a ``BreakpointConfirmationStrategy`` writing into ``snapshot_dir`` or
            ``snapshot_store`` (``once`` pauses for every call: what a person confirmed is not remembered
            across processes); ``never`` tools run without pausing. ``workflow``: for a Temporal worker
            (:mod:`handrail.temporal`), whose workflow decides the calls: the strategies are those of ``pause``,
            with every setting of the file (quorum, allowed decisions, expiry, ...), but write no snapshot.
            The same mode decides the tools of ``mcp_servers`` that no ``confirmation`` entry names and whose
            server's hints say to ask: the console (``always``), none asks, all rejected, or paused as above.
        confirmation_ui: The UI that asks when ``approve`` is ``ask``.
        snapshot_dir: With ``approve="pause"`` (it or ``snapshot_store`` required there): the directory
            snapshots are written to (created on the first pause).
        snapshot_store: With ``approve="pause"``, instead of ``snapshot_dir``: the snapshot store paused runs
            write to, shared by every pausing tool: a SnapshotStore object (``handrail.stores``), or a URL that
            ``handrail.stores.open_snapshot_store`` understands (``sqlite:///approvals.db``, ``postgresql://...``).
        snapshot_metadata: With ``approve="pause"``: JSON data recorded in each snapshot (the CLI records
            ``{"agent_file": <absolute path>}`` so ``handrail resume`` can rebuild the agent).

    Returns:
        The Agent (not warmed up: the model loads and the MCP servers are connected to on first use or
        ``warm_up()``; ``close()`` ends the connections and the servers' processes).

    Raises:
        SpecError: A tool or generator that cannot be resolved, a stdio MCP server whose command is not allowed,
            or an invalid combination (``pause`` with neither or both of ``snapshot_dir`` and ``snapshot_store``,
            or either of them without ``pause``).
    """
    from handrail.components.agents.agent import Agent

    pause = _pause_settings(approve, snapshot_dir, snapshot_store, snapshot_metadata)
    allowed = _allowed(spec, allowed_modules)
    commands = (*spec.allowed_commands, *commands_option(allowed_commands))
    base_dir = spec.folder() if base_dir is None else Path(base_dir)
    tools, built = _tools_and_strategies(spec, base_dir, allowed, commands, approve, confirmation_ui, pause)
    if generator is None:
        from handrail.tools.mcp._servers import allow_commands

        with _located(spec), allow_commands(commands):
            generator = build_generator(spec.generator, allowed_modules=allowed, base_dir=base_dir)
    try:
        with building("the agent", ("generator",), [("tools",), ("exit_conditions",)]):
            return Agent(
                chat_generator=generator,
                tools=tools,
                system_prompt=spec.system_prompt,
                exit_conditions=spec.exit_conditions,
                max_agent_steps=spec.max_agent_steps,
                confirmation_strategies=built,
            )
    except SpecError as exc:
        raise SpecError(f"{spec.where(*exc.location)}{exc}", exc.location) from exc.__cause__


def check_agent_spec(
    spec: AgentSpec,
    *,
    base_dir: str | Path | None = None,
    allowed_modules: Iterable[str] = (),
    allowed_commands: Iterable[str] = (),
    approve: Approve = "pause",
    snapshot_dir: str | Path | None = None,
    snapshot_store: SnapshotStore | str | None = None,
    connect_mcp: bool = False,
) -> dict[str, Any] | None:
    """Check a spec as :func:`build_agent` does, except its generator, which is not built (no model is loaded).

    For a service checking every agent file when it starts: the tools are built (their modules imported), the
    ``confirmation`` rules checked against the tools' arguments and the strategies built with their settings. The
    MCP servers' toolsets are built too (each command checked against the allowlist), but no server is started or
    connected to unless ``connect_mcp``: without it the servers' tools are not known, so ``confirmation`` keys
    that name no other tool are not refused, nor their rules (or those of ``'*'``) checked against arguments.

    Args:
        spec: The validated spec (:func:`load_agent_spec`).
        base_dir: As for :func:`build_agent`.
        allowed_modules: As for :func:`build_agent`.
        allowed_commands: As for :func:`build_agent`.
        approve: As for :func:`build_agent` (``pause`` by default: a service's agents pause).
        snapshot_dir: With ``approve="pause"``: as for :func:`build_agent`.
        snapshot_store: With ``approve="pause"``: as for :func:`build_agent`.
        connect_mcp: Start and connect to every MCP server of the file, list its tools, and check the whole
            ``confirmation`` field against them and the file's other tools, as for a file without servers (the
            connections are closed and the processes ended before this returns).

    Returns:
        The confirmation strategies the agent would get (None: nothing asks).

    Raises:
        SpecError: What :func:`build_agent` raises for the tools and the ``confirmation`` field, naming the file,
            the line and the field; with ``connect_mcp``, a server that cannot be reached too.
    """
    pause = _pause_settings(approve, snapshot_dir, snapshot_store, None)
    commands = (*spec.allowed_commands, *commands_option(allowed_commands))
    base_dir = spec.folder() if base_dir is None else Path(base_dir)
    tools, built = _tools_and_strategies(spec, base_dir, _allowed(spec, allowed_modules), commands, approve,
                                         None, pause)  # fmt: skip
    if not connect_mcp or not spec.mcp_servers:
        return built
    from handrail.tools.toolset import Toolset

    with _located(spec):
        listed = tools_of_servers([t for t in tools if isinstance(t, Toolset)])
        names = {**_argument_names([t for t in tools if not isinstance(t, Toolset)]), **listed}
        return strategies(spec.confirmation, names, approve, None, pause)


def _tools_and_strategies(
    spec: AgentSpec, base_dir: Path, allowed: tuple[str, ...], commands: tuple[str, ...], approve: Approve,
    ui: ConfirmationUI | None, pause: _Pause | None,
) -> tuple[list[Tool | Toolset], dict[str, Any] | None]:  # fmt: skip
    """The spec's tools (its MCP servers' toolsets last) and confirmation strategies; errors at the field's line.

    The MCP tools are known once connected: ``confirmation`` keys that name no other tool are left to the run.
    """
    from handrail.tools.mcp._servers import allow_commands

    with _located(spec), allow_commands(commands):  # a stdio server read from the file's data: its commands
        tools = _tools(spec, base_dir, allowed)
        names = _argument_names(tools)
        built = strategies(spec.confirmation, names, approve, ui, pause, more_tools=bool(spec.mcp_servers))
        if not spec.mcp_servers:
            return list(tools), built
        toolsets = build_mcp_toolsets(spec.mcp_servers, base_dir, commands, default_strategy(approve, ui, pause))
        return [*tools, *toolsets], built


def _argument_names(tools: Iterable[Any]) -> dict[str, set[str]]:
    """``{tool name: the argument names its rules may read}`` (its parameters and the State values it reads)."""
    return {t.name: {*t.parameters.get("properties", {}), *(t.inputs_from_state or {}).values()} for t in tools}


@contextlib.contextmanager
def _located(spec: AgentSpec) -> Iterator[None]:
    """A SpecError raised inside names the field's file and line when the spec came from a file."""
    try:
        yield
    except SpecError as exc:
        raise SpecError(f"{spec.where(*exc.location)}{exc}", exc.location) from exc.__cause__
    except (ConfigurationError, ConfigurationTypeError) as exc:  # a caller's pause setting (a store that is not one)
        raise SpecError(str(exc)) from exc


def _tools(spec: AgentSpec, base_dir: Path, allowed: tuple[str, ...]) -> list[Tool]:
    """Build the spec's tools; refuse two tools of one name."""
    tools: list[Tool] = []
    for i, entry in enumerate(spec.tools):
        item = entry if isinstance(entry, ToolEntry) else ToolEntry(name=entry)
        tool = build_tool(item.name, item.folder, item.top_k, i, base_dir, allowed)
        first = next((j for j, t in enumerate(tools) if t.name == tool.name), None)
        if first is not None:
            raise SpecError(f"tools.{i}: a second tool named {tool.name!r} (the first is tools.{first}).", ("tools", i))
        tools.append(tool)
    return tools
