"""The agents a service runs and resumes: factories given in Python, and agent files.

An :class:`AgentRegistry` answers two questions: which Agent starts a run of agent ``name``
(:meth:`AgentRegistry.agent_named`, for ``POST /api/v1/runs``), and which Agent continues a paused snapshot
(:meth:`AgentRegistry.agent_for`). It knows

* **factories**, ``agents={name: factory}``: a factory is called once, with the service's store, when the
  registry is made, and returns the :class:`~handrail.components.agents.Agent` every run of that name uses (an
  Agent keeps no per-run state, so one instance serves concurrent runs; a local model loads once);
* **agent files**: the file a snapshot records (``metadata["agent_file"]``, as ``handrail run`` writes it), built
  as ``handrail resume`` builds it (its generator, or the model the run was started with), and with
  ``agents_dir`` the files ``<agents_dir>/<name>.yaml`` (or ``.yml``). With ``agents_dir`` set, only files
  inside that directory are accepted, whatever a snapshot records. Module prefixes in ``allowed_modules`` are
  trusted besides handrail's own and the file's ``allowed_modules``; the commands in ``allowed_commands`` may be
  run by the files' stdio MCP servers besides those of each file's ``allowed_commands``.

Every agent must pause into the service's store: each of its confirmation strategies is a pausing one
(``BreakpointConfirmationStrategy``) whose ``snapshot_store`` is the store object itself, and it has at least
one. The confirmation a tool brings itself counts as one of them wherever the agent's own strategies leave it in
charge: an MCP toolset's ``confirmation_strategy`` (None: a console prompt, refused) for the calls its server's
hints say ask. Otherwise a call would wait for a person at the server's console, or pause into a store no resumer
watches, or the run could not be kept durably; such an agent is refused with a
:class:`~handrail.errors.ConfigurationError` naming the agent and the tool, when the registry is made.

So is every agent file of ``agents_dir`` that could not run (:meth:`AgentRegistry.check_files`): a rule that does
not parse or reads a name its tool does not take, a tool that cannot be imported, a confirmation that would not
pause into the store. The files are checked as they are built, but for their generator, which is built when a
run first needs it (a local model is not loaded at startup); the error has one line per bad file, ``FILE:LINE:``
and the problem. A file changed or added later is checked when it is built.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.errors import ConfigurationError, ConfigurationTypeError, UnknownAgentError

if TYPE_CHECKING:
    from handrail.components.agents.agent import Agent
    from handrail.dataclasses.snapshot import AgentSnapshot

__all__ = ["AGENT_FILE_KEY", "AGENT_NAME_KEY", "AgentFactory", "AgentRegistry", "UnknownAgentError"]

AgentFactory = Callable[[Any], "Agent"]
"""``factory(store) -> Agent``: builds the agent of one name, its pausing strategies writing into ``store``."""

AGENT_NAME_KEY = "agent_name"
"""Snapshot ``metadata`` key: the registry name of a service run's agent (it picks the factory on resume)."""
AGENT_FILE_KEY = "agent_file"
"""Snapshot ``metadata`` key: the absolute path of the agent file (``handrail run`` and agents_dir runs)."""
_SUFFIXES = (".yaml", ".yml")


_ADVICE = "give it BreakpointConfirmationStrategy(snapshot_store=store) with the store the factory is passed"
_CONSOLE = (
    "{what} is None, so the calls its tools ask about would wait at a console prompt; in the service a call "
    "is decided through the approval service, never at the server's console"
)
_NONE = ("has no confirmation strategy, so its runs cannot pause into the service's store (a service run is kept "
         "there from its start, and its calls that need a person pause there)")  # fmt: skip


def check_pauses_into(agent: Any, store: Any, what: str) -> None:
    """Refuse an agent that is not an Agent, or whose confirmation strategies do not all pause into ``store``.

    Raises:
        ConfigurationTypeError: ``agent`` is not an Agent.
        ConfigurationError: A strategy that asks at a console (or decides itself), one that pauses into another
            store or a directory, or no pausing strategy at all (named).
    """
    from handrail.components.agents.agent import Agent

    if not isinstance(agent, Agent):
        raise ConfigurationTypeError(f"{what} must be an Agent, got {type(agent).__name__}.")
    strategies = agent.confirmation_strategies or {}
    for key, strategy in strategies.items():
        problem = _not_pausing(key, strategy, store)
        if problem is not None:
            raise ConfigurationError(f"{what}: {problem}: {_ADVICE}.")
    own = _tools_own(agent, strategies)
    for brings, strategy, advice in own:
        problem = _CONSOLE.format(what=brings) if strategy is None else _not_pausing(brings, strategy, store, brings)
        if problem is not None:
            raise ConfigurationError(f"{what}: {problem}: {advice}.")
    if not strategies and not own:
        raise ConfigurationError(f"{what} {_NONE}: {_ADVICE}.")


def _tools_own(agent: Any, strategies: Mapping[Any, Any]) -> list[tuple[str, Any, str]]:
    """The confirmations the agent's tools bring themselves, where the agent's own strategies leave them in charge.

    A tool's ``confirmation_default`` (an MCP tool's, from its server's hints) decides its calls when no strategy
    of the agent covers its name. A toolset with ``tools_may_ask`` (an MCP toolset) knows its tools only once it is
    connected, so what they will bring is its ``confirmation_strategy`` (None: a console prompt), unless a ``"*"``
    strategy of the agent covers every tool. Each: (what brings it, the strategy or None for a toolset's console
    prompt, how to make it pause).
    """
    from handrail.components.agents._confirm import find_strategy
    from handrail.components.agents._tool_defaults import default_strategy
    from handrail.tools.toolset import Toolset
    from handrail.tools.utils import flatten_tools

    items = [agent.tools] if isinstance(agent.tools, Toolset) else list(agent.tools or [])
    found: list[tuple[str, Any, str]] = []
    for item in items:
        if getattr(item, "tools_may_ask", False) and strategies.get("*") is None:
            kind, label = type(item).__name__, getattr(item, "label", None)
            named = f"{kind} {label!r:.80}" if isinstance(label, str) else kind
            advice = (f"give {kind} confirmation_strategy=BreakpointConfirmationStrategy(snapshot_store=store) with "
                      "the store the factory is passed, or the agent a '*' strategy that pauses into it")  # fmt: skip
            found.append(
                (f"the confirmation_strategy of {named}", getattr(item, "confirmation_strategy", None), advice)
            )
    for tool in flatten_tools(items):
        strategy = default_strategy(tool)
        if strategy is not None and find_strategy(strategies, tool.name) is None:
            found.append((f"the confirmation tool {tool.name!r} brings itself", strategy, _ADVICE))
    return found


def _not_pausing(key: Any, strategy: Any, store: Any, what: str | None = None) -> str | None:
    """Why ``strategy`` (for tool ``key``; ``what``: named otherwise) does not pause into ``store``; None if it does."""
    from handrail.human_in_the_loop.types import is_pausing_strategy

    what = what or f"the confirmation strategy for {key!r}"
    if not is_pausing_strategy(strategy):
        return (f"{what} ({type(strategy).__name__}) does not pause the run; in the service a call is decided "
                f"through the approval service, never at the server's console")  # fmt: skip
    if strategy.snapshot_store is not store:
        target = strategy.snapshot_store if strategy.snapshot_store is not None else strategy.snapshot_file_path
        where = target if isinstance(target, str) else type(target).__name__
        return (f"{what} pauses into {where!s:.120}, not into the service's store {store}; its paused runs would "
                f"never be resumed by the service")  # fmt: skip
    return None


class AgentRegistry:
    """The agents of a service, by name (see the module docstring).

    Args:
        store: The service's store (every agent pauses into it).
        agents: ``{name: factory}``; each factory is called once, now, with ``store``.
        agents_dir: A directory of agent files ``<name>.yaml``; when given, only agent files inside it are
            accepted (also those snapshots record).
        allowed_modules: Module prefixes agent files may import from, besides handrail's own and each file's
            ``allowed_modules`` (the CLI's ``--allow-module``).
        allowed_commands: Programs the agent files' stdio MCP servers may run, besides those of each file's
            ``allowed_commands`` (the CLI's ``--allow-command``).

    Raises:
        ConfigurationError / ConfigurationTypeError: A bad name, a factory that is not callable, that raises, or
            whose agent does not pause into ``store`` (named); an ``agents_dir`` that is not a directory.
    """

    def __init__(
        self,
        store: Any,
        *,
        agents: Mapping[str, AgentFactory] | None = None,
        agents_dir: str | os.PathLike[str] | None = None,
        allowed_modules: Iterable[str] = (),
        allowed_commands: Iterable[str] = (),
    ) -> None:
        self.store = store
        """The service's store."""
        self.allowed_modules: tuple[str, ...] = _prefixes(allowed_modules)
        """Module prefixes agent files may import from, besides handrail's and the file's own."""
        self.allowed_commands: tuple[str, ...] = _prefixes(allowed_commands, "allowed_commands", "command", "python")
        """Programs the agent files' stdio MCP servers may run, besides those each file allows."""
        self.agents_dir: Path | None = _directory(agents_dir)
        """The directory of agent files (None: agent files are read wherever snapshots record them)."""
        self._agents: dict[str, Agent] = {}
        self._files: dict[tuple[str, int, tuple[tuple[str, str], ...]], Agent] = {}
        self._lock = threading.Lock()
        if agents is not None and not isinstance(agents, Mapping):
            raise ConfigurationTypeError(f"agents must be a mapping of name to factory, got {type(agents).__name__}.")
        for name, factory in (agents or {}).items():
            self._agents[_name(name)] = _built(name, factory, store)
        self.check_files()

    def check_files(self) -> None:
        """Check every agent file of ``agents_dir`` as it is built, its generator left unbuilt (see the module).

        Raises:
            SpecError: One line per file that could not run: ``FILE:LINE: problem``.
        """
        from handrail.specs._errors import SpecError

        problems: list[str] = []
        for path in self._directory_files():
            try:
                self._check_file(path)
            except (ConfigurationError, ConfigurationTypeError) as exc:
                lines = str(exc).splitlines() or [type(exc).__name__]
                more = f" (and {len(lines) - 1} more in this file)" if len(lines) > 1 else ""
                first = lines[0] if lines[0].startswith(str(path)) else f"{path}: {lines[0]}"
                problems.append(first + more)
        if problems:
            raise SpecError("\n".join(problems))

    def _directory_files(self) -> list[Path]:
        """The agent files of ``agents_dir`` that :meth:`agent_named` would build (one per name), sorted."""
        if self.agents_dir is None:
            return []
        found = {self._file_of(p.stem) for p in self.agents_dir.iterdir() if p.suffix in _SUFFIXES and p.is_file()}
        return sorted(path for path in found if path is not None)

    def _check_file(self, path: Path) -> None:
        from handrail.specs.agent_spec import check_agent_spec

        spec = self._spec(path)
        built = check_agent_spec(spec, base_dir=path.parent, allowed_modules=self.allowed_modules,
                                 allowed_commands=self.allowed_commands, snapshot_store=self.store) or {}  # fmt: skip
        for key, strategy in built.items():
            problem = _not_pausing(key, strategy, self.store)
            if problem is not None:
                raise ConfigurationError(f"{spec.where('confirmation', key) or f'{path}: '}{problem}.")
        if not built and not spec.mcp_servers:  # an MCP server's tools that ask pause into the store
            raise ConfigurationError(f"{path}:1: the agent {_NONE}: give a tool a confirmation that asks a person.")

    def names(self) -> list[str]:
        """The names :meth:`agent_named` knows: the factories', then the agent files' of ``agents_dir``, sorted."""
        found = set(self._agents)
        if self.agents_dir is not None:
            found.update(p.stem for p in self.agents_dir.iterdir() if p.suffix in _SUFFIXES and p.is_file())
        return sorted(found)

    def agent_named(self, name: str) -> tuple[Agent, dict[str, Any]]:
        """The Agent that starts a run of ``name`` and the metadata its snapshots record (``agent_name``, file).

        Raises:
            UnknownAgentError: No factory and no agent file of that name (the message lists the names known).
            ConfigurationError: The file cannot be built or does not pause into the store.
        """
        checked = _name(name)
        if checked in self._agents:
            return self._agents[checked], {AGENT_NAME_KEY: checked}
        path = self._file_of(checked)
        if path is None:
            known = ", ".join(self.names()) or "none"
            raise UnknownAgentError(f"No agent named {checked!r} in this service (agents: {known}).")
        return self._from_file(path, {}), {AGENT_NAME_KEY: checked, AGENT_FILE_KEY: str(path)}

    def agent_for(self, snapshot: AgentSnapshot) -> Agent:
        """The Agent that continues ``snapshot`` (see :meth:`resolve`)."""
        return self.resolve(snapshot)[0]

    def resolve(self, snapshot: AgentSnapshot) -> tuple[Agent, str]:
        """The Agent that continues ``snapshot`` and its name.

        Found in this order:

        1. the factory of the snapshot's agent name (``metadata["agent_name"]``, else its breakpoint's);
        2. the agent file the snapshot records (``metadata["agent_file"]``; inside ``agents_dir`` when set);
        3. the agent file of that name in ``agents_dir``;
        4. for a snapshot without a name (paused from Python), the one factory's agent that defines the same agent
           (its tools, prompts, exit conditions and state schema: the snapshot's fingerprint).

        Raises:
            UnknownAgentError: None of these, or the file is outside ``agents_dir`` or gone.
            ConfigurationError: The file cannot be built, or its agent does not pause into the store.
        """
        from handrail.specs._resume import recorded_models

        metadata = snapshot.metadata if isinstance(snapshot.metadata, dict) else {}
        name = metadata.get(AGENT_NAME_KEY) or snapshot.break_point.agent_name
        if isinstance(name, str) and name in self._agents:
            return self._agents[name], name
        recorded = metadata.get(AGENT_FILE_KEY)
        if isinstance(recorded, str) and recorded:
            path = self._accepted(Path(recorded), snapshot)
            label = name if isinstance(name, str) and name else path.stem
            return self._from_file(path, recorded_models(metadata)), label
        named = self._file_of(name) if isinstance(name, str) and name else None
        if named is not None:
            return self._from_file(named, recorded_models(metadata)), named.stem
        if not name:
            matching = [(n, a) for n, a in self._agents.items() if _fingerprint(a) == snapshot.fingerprint]
            if len(matching) == 1:
                return matching[0][1], matching[0][0]
        known = ", ".join(self.names()) or "none"
        raise UnknownAgentError(
            f"No agent to resume snapshot {snapshot.snapshot_id}: its agent {name!r} is not one of this service's "
            f"({known}) and it records no agent file."
        )

    def _file_of(self, name: str) -> Path | None:
        if self.agents_dir is None or name in (".", "..") or "/" in name or os.sep in name:
            return None
        for suffix in _SUFFIXES:
            path = (self.agents_dir / f"{name}{suffix}").resolve()
            if path.is_file() and path.is_relative_to(self.agents_dir):  # a link out of the directory is not taken
                return path
        return None

    def _accepted(self, path: Path, snapshot: AgentSnapshot) -> Path:
        """The recorded agent file, resolved; refused when it is outside ``agents_dir`` or gone."""
        resolved = path.resolve()
        if self.agents_dir is not None and not resolved.is_relative_to(self.agents_dir):
            raise UnknownAgentError(
                f"Snapshot {snapshot.snapshot_id} records the agent file {path}, which is outside the service's "
                f"agents directory {self.agents_dir}; it is not run here."
            )
        if not resolved.is_file():
            raise UnknownAgentError(f"The agent file recorded in snapshot {snapshot.snapshot_id} is gone ({path}).")
        return resolved

    def _from_file(self, path: Path, models: Mapping[str, str]) -> Agent:
        """The agent of ``path`` (built once per file version and model choice), as ``handrail resume`` builds it."""
        key = (str(path), path.stat().st_mtime_ns, tuple(sorted(models.items())))
        with self._lock:
            found = self._files.get(key)
            if found is None:
                found = self._files[key] = self._build_file(path, models)
        return found

    def _spec(self, path: Path) -> Any:
        """The file's spec; a folder holding modules the file trusts goes on ``sys.path``, as for 'handrail run'."""
        from handrail.specs.agent_spec import load_agent_spec

        spec = load_agent_spec(path)
        folder = str(path.parent)
        if spec.allowed_modules and folder not in sys.path:
            sys.path.insert(0, folder)
        return spec

    def _build_file(self, path: Path, models: Mapping[str, str]) -> Agent:
        from handrail.specs._resume import model_generator
        from handrail.specs.agent_spec import build_agent

        spec = self._spec(path)
        metadata: dict[str, Any] = {AGENT_FILE_KEY: str(path)}
        if models:
            metadata["generator"] = dict(models)
        agent = build_agent(
            spec, base_dir=path.parent, allowed_modules=self.allowed_modules, allowed_commands=self.allowed_commands,
            generator=model_generator(**models),
            approve="pause", snapshot_store=self.store, snapshot_metadata=metadata,
        )  # fmt: skip
        check_pauses_into(agent, self.store, f"The agent of {path}")
        return agent


def _fingerprint(agent: Agent) -> dict[str, Any] | None:
    """The agent's definition as snapshots record it (None when its tools cannot be listed without a warm-up)."""
    from handrail.components.agents._resume import fingerprint_of
    from handrail.tools.toolset import Toolset
    from handrail.tools.utils import flatten_tools

    if isinstance(agent.tools, Toolset) or any(isinstance(t, Toolset) for t in agent.tools or []):
        return None  # a toolset's tools are known once it is warmed up: such an agent is picked by its name only
    return fingerprint_of(flatten_tools(agent.tools), agent)


def _built(name: str, factory: object, store: Any) -> Agent:
    if not callable(factory):
        raise ConfigurationTypeError(
            f"The factory of agent {name!r} must be callable as factory(store) -> Agent, got {type(factory).__name__}."
        )
    try:
        agent = factory(store)
    except (ConfigurationError, ConfigurationTypeError) as exc:
        raise ConfigurationError(f"The factory of agent {name!r} refused to build it: {exc}") from exc
    check_pauses_into(agent, store, f"The agent of factory {name!r}")
    return agent  # type: ignore[no-any-return]


def _name(name: object) -> str:
    if not isinstance(name, str):
        raise ConfigurationTypeError(f"An agent name must be a str, got {type(name).__name__}.")
    if not name.strip() or len(name) > 200 or not name.isprintable():
        raise ConfigurationError(f"An agent name must be 1 to 200 printable characters, got {name!r:.80}.")
    return name


def _prefixes(values: Iterable[str], name: str = "allowed_modules", what: str = "module prefix",
              example: str = "mytools") -> tuple[str, ...]:  # fmt: skip
    if isinstance(values, str):
        raise ConfigurationTypeError(f"{name} must be a list of {what}es, not one str.")
    found = tuple(values)
    for value in found:
        if not isinstance(value, str) or not value.strip():
            raise ConfigurationError(f"{name} holds {value!r}; each must be a {what} (e.g. {example!r}).")
    return found


def _directory(value: str | os.PathLike[str] | None) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise ConfigurationTypeError(f"agents_dir must be a directory path, got {type(value).__name__}.")
    path = Path(value).resolve()
    if not path.is_dir():
        raise ConfigurationError(f"agents_dir {value} is not a directory.")
    return path
