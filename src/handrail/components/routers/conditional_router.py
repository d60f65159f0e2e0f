"""ConditionalRouter: sends its inputs to the first route whose Jinja2 condition holds.

Templates render in Jinja2's sandbox. By default (``unsafe=False``) they render to text, and each
rendered output becomes a Python value through :func:`ast.literal_eval` when it is a literal
(``"[1, 2]"`` → ``[1, 2]``), else stays a string. With ``unsafe=True`` they render to native
Python objects, so ``{{replies}}`` yields the list of ChatMessages itself; the sandbox still
refuses unsafe attribute access (``__class__``, ``_private``) either way.

Examples:
    >>> router = ConditionalRouter([
    ...     {"condition": "{{streams|length > 2}}", "output": "{{streams}}",
    ...      "output_name": "enough_streams", "output_type": list[int]},
    ...     {"condition": "{{streams|length <= 2}}", "output": "{{streams}}",
    ...      "output_name": "insufficient_streams", "output_type": list[int]},
    ... ])
    >>> router.run(streams=[1, 2, 3])
    {'enough_streams': [1, 2, 3]}
"""

from __future__ import annotations

import ast
import copy
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from handrail.components.routers._routes import Route, parse_routes, value_matches
from handrail.core.component import component
from handrail.core.serialization import (
    active_allowlist,
    deserialize_callable,
    deserialize_type,
    init_parameters,
    qualified_name,
    restricted_imports,
    serialize_callable,
    serialize_type,
)
from handrail.errors import ComponentError, ConfigurationTypeError, NoRouteSelectedException, RunError

if TYPE_CHECKING:
    from jinja2 import Template

__all__ = ["ConditionalRouter", "NoRouteSelectedException", "RouteConditionException"]

_LITERAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


class RouteConditionException(RunError):
    """A route's condition or output failed to render, or its output does not fit ``output_type``.

    The message names the route (index and output names), the template, and the variables it reads
    with the types of their values; the original exception is chained.

    Attributes:
        route_index: Position of the failing route in ``routes``.
        output_names: The route's output names.
    """

    def __init__(self, message: str, *, route_index: int, output_names: tuple[str, ...]) -> None:
        super().__init__(message)
        self.route_index = route_index
        self.output_names = output_names


class _RouteOutputTypeError(RouteConditionException, ValueError):
    """A route's output is not of its ``output_type`` (``validate_output_type=True``): a ValueError, as in Haystack."""


@component
class ConditionalRouter:
    """Routes data to the outputs of the first route whose condition renders true (Haystack's ConditionalRouter).

    Each route is a dict with ``condition`` (a Jinja2 template rendering to a boolean), ``output`` (a
    template, or a list of templates), ``output_name`` (a name, or a list as long as ``output``) and
    ``output_type`` (a type, or a list as long as ``output``; ``typing`` aliases such as
    ``List[ChatMessage]`` are read as ``list[ChatMessage]``). Routes are tried in order.

    Input sockets are the variables the templates read, mandatory unless named in
    ``optional_variables`` (those default to None). Output sockets are the output names of every
    route; a run fills only those of the route taken, so in a pipeline the other branches never run.

    Args:
        routes: The routes, in the order they are tried.
        custom_filters: Extra Jinja2 filters by name (module-level functions, so they serialize).
        unsafe: Render to native Python objects instead of text (needed to pass objects such as
            ChatMessages through). Rendering stays sandboxed; use it only with templates you trust.
        validate_output_type: Check each output value against its ``output_type`` when routed.
        optional_variables: Variables that may be left out (they are None then).

    Raises:
        ConfigurationTypeError: ``routes`` is not a list, a route is not a dict, or ``custom_filters``
            / ``optional_variables`` have the wrong shape.
        ComponentError: A route misses a key or has an unknown one, its lists of outputs, names and
            types differ in length, a template does not parse, or two routes give one output name
            different types (the message names the route).
    """

    def __init__(
        self,
        routes: list[dict[str, Any]],
        custom_filters: Mapping[str, Callable[..., Any]] | None = None,
        unsafe: bool = False,
        validate_output_type: bool = False,
        optional_variables: list[str] | None = None,
    ) -> None:
        from handrail.core._sandbox import make_environment

        self._parsed: list[Route] = parse_routes(routes)
        self.routes: list[dict[str, Any]] = [_copy_route(r) for r in routes]
        """The route dicts as given (output types as given)."""
        self.custom_filters: dict[str, Callable[..., Any]] = _check_filters(custom_filters)
        self.unsafe = bool(unsafe)
        self.validate_output_type = bool(validate_output_type)
        self.optional_variables: list[str] = _check_optional(optional_variables)
        self._environment = make_environment(native=self.unsafe, filters=self.custom_filters)
        self._allowlist: tuple[str, ...] | None = None
        """The allowlist of the file this router was loaded from: name lookups while rendering stay in it."""
        self._variables: dict[tuple[int, int], set[str]] = {}
        """The variables each template reads, by (route index, slot): slot 0 the condition, 1.. the outputs."""
        self._templates: list[tuple[Template, list[Template]]] = [self._compile(route) for route in self._parsed]
        used: set[str] = set().union(*self._variables.values())
        unused = sorted(set(self.optional_variables) - used)
        if unused:
            logging.getLogger("handrail.components.routers").warning(
                "ConditionalRouter: the optional variables %s are specified but not used in any route; check "
                "their spelling.",
                unused,
            )
        self._mandatory = sorted(used - set(self.optional_variables))
        component.set_input_types(self, **dict.fromkeys(self._mandatory, Any))
        for name in sorted(used & set(self.optional_variables)):
            component.set_input_type(self, name, Any, default=None)
        outputs = {name: t for route in self._parsed for name, t in zip(route.names, route.types, strict=True)}
        component.set_output_types(self, **outputs)

    def _compile(self, route: Route) -> tuple[Template, list[Template]]:
        """Parse one route's templates and record the variables each reads (slot 0: condition, 1..: outputs)."""
        from jinja2 import TemplateSyntaxError

        from handrail.core._sandbox import template_variables

        compiled: list[Template] = []
        for slot, source in enumerate((route.condition, *route.outputs)):
            what = "condition" if slot == 0 else f"output '{route.names[slot - 1]}'"
            try:
                self._variables[(route.index, slot)] = template_variables(self._environment, source)
                compiled.append(self._environment.from_string(source))
            except TemplateSyntaxError as exc:
                raise ComponentError(
                    f"ConditionalRouter {route.label}: Invalid template for {what}: {source!r} does not parse: {exc}"
                ) from exc
        return compiled[0], compiled[1:]

    def run(self, **kwargs: Any) -> dict[str, Any]:
        """Render the routes in order and return the outputs of the first whose condition holds.

        Args:
            **kwargs: The template variables (extra names are accepted and ignored).

        Returns:
            ``{output_name: value}`` for every output of the route taken.

        Raises:
            ConfigurationTypeError: A mandatory variable is missing.
            NoRouteSelectedException: No condition held; the message lists the routes.
            RouteConditionException: A template failed to render, a condition (``unsafe=False``)
                did not render a Python literal, or (``validate_output_type``) a value does not fit
                its type; the message names the route and the variables.
        """
        missing = [name for name in self._mandatory if name not in kwargs]
        if missing:
            raise ConfigurationTypeError(f"ConditionalRouter.run() is missing the input(s) {missing}.")
        values = {**dict.fromkeys(self.optional_variables), **kwargs}
        for route, (condition, outputs) in zip(self._parsed, self._templates, strict=True):
            if not self._condition_holds(route, condition, values):
                continue
            result = {
                name: self._render_output(route, slot, template, values)
                for slot, (name, template) in enumerate(zip(route.names, outputs, strict=True), start=1)
            }
            if self.validate_output_type:
                self._check_types(route, result, values)
            return result
        raise NoRouteSelectedException(
            "No route of the ConditionalRouter matched; routes tried, in order: "
            + "; ".join(f"{r.label}: condition {r.condition!r}" for r in self._parsed)
            + f". Inputs: {_describe(values, set(values))}."
        )

    def _condition_holds(self, route: Route, template: Template, values: dict[str, Any]) -> bool:
        rendered = self._render(route, 0, template, values)
        if self.unsafe:
            return bool(rendered)
        try:
            return bool(ast.literal_eval(rendered.strip()))
        except _LITERAL_ERRORS as exc:
            raise self._error(
                route, 0, values, f"rendered {rendered!r}, which is not a Python literal such as True"
            ) from exc

    def _render_output(self, route: Route, slot: int, template: Template, values: dict[str, Any]) -> Any:
        rendered = self._render(route, slot, template, values)
        if self.unsafe:
            return rendered
        try:
            return ast.literal_eval(rendered)
        except _LITERAL_ERRORS:
            return rendered

    def _render(self, route: Route, slot: int, template: Template, values: dict[str, Any]) -> Any:
        from handrail.core._sandbox_limits import rendering

        try:
            with rendering():
                if self._allowlist is not None:
                    with restricted_imports(self._allowlist):
                        return template.render(values)
                return template.render(values)
        except Exception as exc:  # any error a template or a user object raises while rendering
            raise self._error(
                route, slot, values, f"failed to render: {type(exc).__name__}: {str(exc).rstrip('.')}"
            ) from exc

    def _check_types(self, route: Route, result: dict[str, Any], values: dict[str, Any]) -> None:
        for slot, (name, expected) in enumerate(zip(route.names, route.types, strict=True), start=1):
            if not value_matches(result[name], expected):
                raise self._error(
                    route,
                    slot,
                    values,
                    f"rendered a {type(result[name]).__name__} ({result[name]!r:.120}), "
                    f"which is not of output_type {serialize_type(expected)} (route type doesn't match)",
                    kind=_RouteOutputTypeError,
                )

    def _error(
        self,
        route: Route,
        slot: int,
        values: dict[str, Any],
        problem: str,
        kind: type[RouteConditionException] = RouteConditionException,
    ) -> RouteConditionException:
        source = route.condition if slot == 0 else route.outputs[slot - 1]
        what = "condition" if slot == 0 else f"output '{route.names[slot - 1]}'"
        variables = _describe(values, self._variables[(route.index, slot)])
        return kind(
            f"ConditionalRouter {route.label}: the {what} template {source!r} {problem}. Variables: {variables}.",
            route_index=route.index,
            output_names=route.names,
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialize the router: output types as type strings, custom filters as dotted paths.

        Returns:
            ``{"type": ..., "init_parameters": {"routes", "custom_filters", "unsafe",
            "validate_output_type", "optional_variables"}}``.

        Raises:
            SerializationError: A type or filter cannot be named by a dotted path (local class, lambda).
        """
        routes = []
        for raw, route in zip(self.routes, self._parsed, strict=True):
            types = [serialize_type(t) for t in route.types]
            routes.append({**copy.deepcopy(raw), "output_type": types if isinstance(raw["output"], list) else types[0]})
        return {
            "type": qualified_name(self),
            "init_parameters": {
                "routes": routes,
                "custom_filters": {name: serialize_callable(f) for name, f in self.custom_filters.items()},
                "unsafe": self.unsafe,
                "validate_output_type": self.validate_output_type,
                "optional_variables": list(self.optional_variables),
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConditionalRouter:
        """Rebuild a router from :meth:`to_dict`'s envelope (``data`` is not modified).

        Types and filters are imported by their dotted paths, within the allowlist of an enclosing
        :func:`~handrail.core.serialization.restricted_imports` when there is one; the router then renders its
        templates under that allowlist too, so a filter that resolves names cannot reach past it.

        Args:
            data: The envelope.

        Returns:
            The router.

        Raises:
            SerializationError: A malformed envelope, or a type or filter that cannot be imported.
        """
        params = init_parameters(data, cls)
        if isinstance(params.get("routes"), list):  # anything else: the constructor names what is wrong
            routes = []
            for i, raw in enumerate(params["routes"]):
                route = copy.deepcopy(raw)
                if isinstance(route, dict) and "output_type" in route:
                    route["output_type"] = _read_types(route["output_type"], f"routes[{i}].output_type")
                routes.append(route)
            params["routes"] = routes
        filters = params.get("custom_filters")
        if isinstance(filters, dict):
            params["custom_filters"] = {
                name: deserialize_callable(path, where=f"custom_filters[{name!r}]") for name, path in filters.items()
            }
        router = cls(**params)
        router._allowlist = active_allowlist()  # a file's router renders under the file's allowlist
        return router


def _read_types(value: Any, where: str) -> Any:
    if isinstance(value, list):
        return [deserialize_type(v, where=f"{where}[{j}]") if isinstance(v, str) else v for j, v in enumerate(value)]
    return deserialize_type(value, where=where) if isinstance(value, str) else value


def _copy_route(route: dict[str, Any]) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, list | tuple) else value for key, value in route.items()}


def _check_filters(filters: Mapping[str, Callable[..., Any]] | None) -> dict[str, Callable[..., Any]]:
    if filters is None:
        return {}
    if not isinstance(filters, Mapping) or not all(isinstance(k, str) and callable(f) for k, f in filters.items()):
        raise ConfigurationTypeError(
            f"ConditionalRouter custom_filters must map filter names to callables, got {filters!r:.200}."
        )
    return dict(filters)


def _check_optional(names: Iterable[str] | None) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
        raise ConfigurationTypeError(f"ConditionalRouter optional_variables must be a list of names, got {names!r}.")
    return list(names)


def _describe(values: Mapping[str, Any], names: Iterable[str]) -> str:
    shown = [f"{n}={_type_name(values[n])}" if n in values else f"{n} (not given)" for n in sorted(names)]
    return ", ".join(shown) if shown else "none"


def _type_name(value: Any) -> str:
    if isinstance(value, list | tuple | set) and value:
        inner = sorted({type(v).__name__ for v in value})
        return f"{type(value).__name__}[{' | '.join(inner)}] of {len(value)}"
    return type(value).__name__
