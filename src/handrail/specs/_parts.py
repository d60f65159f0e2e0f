"""Building the parts an agent file names: its chat generator and its tools.

Every failure is a :class:`SpecError` whose ``location`` is the field at fault (``generator.init_parameters.n_ctx``,
``tools.1``); :func:`handrail.specs.build_agent` adds the file and line.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handrail.core.serialization import check_scalar_types, import_object, restricted_imports
from handrail.errors import SerializationError
from handrail.specs._errors import Location, SpecError, building, dotted

if TYPE_CHECKING:
    from handrail.specs.agent_spec import GeneratorSpec
    from handrail.tools.tool import Tool

__all__ = ["BUILTIN_GENERATORS", "BUILTIN_TOOLS", "build_generator", "build_tool"]

BUILTIN_GENERATORS = ("llama_cpp", "openai")
BUILTIN_TOOLS = ("calculator", "search")


def _fields(spec: GeneratorSpec) -> list[Location]:
    """The settings of a generator block, where each is written (for errors that name one of them)."""
    found: list[Location] = [("generator", "init_parameters", name) for name in spec.init_parameters]
    for name in ("generation_kwargs", "model", "api_base_url"):
        if getattr(spec, name) is not None:
            found.append(("generator", name))
    return found


def _kwargs(spec: GeneratorSpec) -> dict[str, Any]:
    kwargs = dict(spec.init_parameters)
    if spec.generation_kwargs is not None:
        kwargs["generation_kwargs"] = spec.generation_kwargs
    return kwargs


def _check_names(cls: type, kwargs: dict[str, Any], spec: GeneratorSpec) -> None:
    """Refuse an init parameter ``cls`` does not take, at its own line (before anything is built)."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # no signature to check against: the constructor will say
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = [name for name in spec.init_parameters if name not in params]
    if not unknown:
        return
    location = ("generator", "init_parameters", unknown[0])
    default = (
        f" (generator.type is not given, so it is {spec.type}, the default; name the generator to use there)"
        if "type" not in spec.model_fields_set
        else ""
    )
    accepted = [n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL and n not in kwargs]
    raise SpecError(
        f"{dotted(location)}: {cls.__name__} takes no parameter {unknown[0]!r}{default}. "
        f"Its other parameters: {', '.join(accepted) or '(none)'}.",
        location,
    )


def _builtin(spec: GeneratorSpec, base_dir: str | Path) -> Any:
    from handrail.components.generators.chat import LlamaCppChatGenerator, OpenAIChatGenerator

    own = {  # init parameters the block's own fields set; both given would leave one of them unused
        "model": ("model", spec.type == "llama_cpp" or spec.model is not None),
        "model_path": ("model", spec.type == "llama_cpp" and spec.model is not None),
        "api_base_url": ("api_base_url", spec.type == "openai" and spec.api_base_url is not None),
        "generation_kwargs": ("generation_kwargs", spec.generation_kwargs is not None),
    }
    for name, (field, taken) in own.items():
        if taken and name in spec.init_parameters:
            location = ("generator", "init_parameters", name)
            raise SpecError(f"{dotted(location)}: give it as generator.{field}, not in init_parameters.", location)
    kwargs = _kwargs(spec)
    cls: type = LlamaCppChatGenerator if spec.type == "llama_cpp" else OpenAIChatGenerator
    _check_names(cls, kwargs, spec)
    if spec.type == "llama_cpp":
        model = spec.model or "default"
        if model.endswith(".gguf") or "/" in model:
            kwargs["model_path"] = str(Path(base_dir) / Path(model).expanduser())
        else:
            kwargs["model"] = model
    else:
        kwargs.update({k: v for k, v in (("model", spec.model), ("api_base_url", spec.api_base_url)) if v is not None})
    with building(cls.__name__, ("generator",), _fields(spec)):
        check_scalar_types(cls, kwargs)
        return cls(**kwargs)


def build_generator(spec: GeneratorSpec, *, allowed_modules: Iterable[str] = (), base_dir: str | Path = ".") -> Any:
    """Build the chat generator a spec names.

    Raises:
        SpecError: An unknown type, a dotted path outside the allowlist, an init parameter the class does not
            take, or any failure of the class's constructor (its type and message kept, chained); ``location``
            is the field at fault.
    """
    if spec.type in BUILTIN_GENERATORS:
        return _builtin(spec, base_dir)
    allowed = tuple(allowed_modules)
    at_type = ("generator", "type")
    with restricted_imports(allowed):
        try:
            cls = import_object(spec.type, allowed_modules=allowed)
        except SerializationError as exc:
            raise SpecError(f"generator.type: {exc}", at_type) from exc
        handrail_component = (
            isinstance(cls, type)
            and cls.__module__.startswith("handrail.components.")
            and not (cls.__module__.startswith("handrail.components.generators."))
        )
        if not isinstance(cls, type) or not callable(getattr(cls, "run", None)) or handrail_component:
            raise SpecError(
                f"generator.type: '{spec.type}' is not a chat generator class (a class with run()).", at_type
            )
        kwargs = _kwargs(spec)
        from_dict = getattr(cls, "from_dict", None)
        if not callable(from_dict):
            _check_names(cls, kwargs, spec)
        with building(cls.__name__, ("generator",), _fields(spec), read_at=("generator",) if from_dict else None):
            if callable(from_dict):
                return from_dict({"type": spec.type, "init_parameters": kwargs})
            check_scalar_types(cls, kwargs)
            return cls(**kwargs)


def build_tool(name: str, folder: str | None, top_k: int | None, index: int, base_dir: Path,
               allowed: tuple[str, ...]) -> Tool:  # fmt: skip
    """Build the tool of ``tools[index]`` (a built-in name or a dotted path, with the search tool's settings).

    Raises:
        SpecError: An unknown name, a path outside the allowlist or to neither a Tool nor a function, or any
            failure while the tool is built; ``location`` is ``("tools", index)`` (or one of its settings).
    """
    at = ("tools", index)
    with building(f"the tool {name!r}", at, [(*at, "folder"), (*at, "top_k")]):
        return _tool(name, folder, top_k, at, base_dir, allowed)


def _tool(name: str, folder: str | None, top_k: int | None, at: Location, base_dir: Path,
          allowed: tuple[str, ...]) -> Tool:  # fmt: skip
    from handrail.tools.from_function import create_tool_from_function
    from handrail.tools.tool import Tool

    where = dotted(at)
    if name != "search" and (folder is not None or top_k is not None):
        raise SpecError(f"{where}: 'folder' and 'top_k' apply to the built-in search tool, not to '{name}'.", at)
    if name in BUILTIN_TOOLS:
        from handrail.tools import builtin

        if name == "search" and (folder is not None or top_k is not None):
            return builtin.make_search_tool(None if folder is None else (base_dir / folder), top_k=top_k or 3)
        tool: Tool = getattr(builtin, name)
        return tool
    if "." not in name:
        raise SpecError(
            f"{where}: '{name}' is not a built-in tool ({', '.join(BUILTIN_TOOLS)}) nor a dotted path "
            f"such as 'my_package.tools.my_tool'.",
            at,
        )
    with restricted_imports(allowed):
        try:
            obj = import_object(name, allowed_modules=allowed)
        except SerializationError as exc:
            raise SpecError(f"{where}: {exc}", at) from exc
    if isinstance(obj, Tool):
        return obj
    if name == "handrail" or name.startswith("handrail."):
        raise SpecError(f"{where}: '{name}' is one of handrail's own functions, which cannot be made a tool.", at)
    if callable(obj) and not isinstance(obj, type):
        return create_tool_from_function(obj)
    raise SpecError(f"{where}: '{name}' is neither a Tool nor a function.", at)
