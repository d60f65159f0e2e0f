"""Docstrings in Google, reST/Sphinx and NumPy style give the same tool descriptions and parameter texts."""

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from handrail.core.component import component
from handrail.tools import ComponentTool, Tool, create_tool_from_function, tool
from handrail.tools._docstrings import parse_docstring

GOOGLE = """Find flights between two cities.

    Searches every airline.

    Args:
        origin: Where the flight leaves from.
        destination (str): Where it lands, given as a city
            name or an airport code.

    Returns:
        The flights found.

    Raises:
        ValueError: When a city is unknown.
    """

REST = """Find flights between two cities.

    Searches every airline.

    :param origin: Where the flight leaves from.
    :type origin: str
    :param str destination: Where it lands, given as a city
        name or an airport code.
    :returns: The flights found.
    :rtype: list[str]
    :raises ValueError: When a city is unknown.
    """

NUMPY = """Find flights between two cities.

    Searches every airline.

    Parameters
    ----------
    origin : str
        Where the flight leaves from.
    destination : str
        Where it lands, given as a city
        name or an airport code.

    Returns
    -------
    list[str]
        The flights found.

    Raises
    ------
    ValueError
        When a city is unknown.
    """

MIXED = """Find flights between two cities.

    Searches every airline.

    Args:
        origin: Where the flight leaves from.

    :param destination: Where it lands, given as a city
        name or an airport code.

    Returns
    -------
    list[str]
        The flights found.
    """

STYLES = pytest.mark.parametrize("doc", [GOOGLE, REST, NUMPY, MIXED], ids=["google", "rest", "numpy", "mixed"])

DESCRIPTION = "Find flights between two cities.\n\nSearches every airline."
PARAMS = {
    "origin": "Where the flight leaves from.",
    "destination": "Where it lands, given as a city name or an airport code.",
}


def _function(doc: str) -> Callable[..., list[str]]:
    def find_flights(origin: str, destination: str) -> list[str]:
        return [f"{origin}-{destination}"]

    find_flights.__doc__ = doc
    return find_flights


def _descriptions(t: Tool) -> dict[str, Any]:
    return {name: prop.get("description") for name, prop in t.parameters["properties"].items()}


@STYLES
def test_parse_docstring_reads_each_style(doc: str) -> None:
    assert parse_docstring(doc) == (DESCRIPTION, PARAMS)


@STYLES
def test_create_tool_from_function_reads_each_style(doc: str) -> None:
    t = create_tool_from_function(_function(doc))
    assert t.description == DESCRIPTION
    assert _descriptions(t) == PARAMS
    assert t.invoke(origin="OSL", destination="BER") == ["OSL-BER"]


@STYLES
def test_tool_decorator_reads_each_style(doc: str) -> None:
    t = tool(_function(doc))
    assert (t.description, _descriptions(t)) == (DESCRIPTION, PARAMS)


def _component(run_doc: str, class_doc: str | None = "Books flights.") -> Any:
    @component
    class FlightSearch:
        @component.output_types(flights=list[str])
        def run(self, origin: str, destination: str) -> dict[str, Any]:
            return {"flights": [f"{origin}-{destination}"]}

    FlightSearch.__doc__ = class_doc
    FlightSearch.run.__doc__ = run_doc
    return FlightSearch()


@STYLES
def test_component_tool_reads_each_style(doc: str) -> None:
    t = ComponentTool(_component(doc))
    assert t.description == "Books flights."
    assert _descriptions(t) == PARAMS
    assert t.parameters["description"] == DESCRIPTION  # top level, as Haystack's schema has


@STYLES
def test_component_tool_description_defaults_to_a_class_docstring_in_any_style(doc: str) -> None:
    t = ComponentTool(_component("Run it.", class_doc=doc))
    assert t.description == DESCRIPTION


def test_component_tool_without_run_docstring_has_no_top_level_description() -> None:
    t = ComponentTool(_component(""))
    assert "description" not in t.parameters
    assert _descriptions(t) == {"origin": None, "destination": None}


@pytest.mark.parametrize(
    "doc",
    [
        "Find flights.\n\n    Looks everywhere, and\n    returns a list.\n    ",
        "Find flights.\n\n    Looks everywhere, and\n    returns a list.\n\n    Returns:\n        A list.\n    ",
        "Find flights.\n\n    Looks everywhere, and\n    returns a list.\n\n    :returns: A list.\n    ",
        "Find flights.\n\n    Looks everywhere, and\n    returns a list.\n\n    Returns\n    -------\n    list\n    ",
    ],
    ids=["plain", "google-returns", "rest-returns", "numpy-returns"],
)
def test_docstring_without_parameter_sections(doc: str) -> None:
    t = create_tool_from_function(_function(doc))
    assert t.description == "Find flights.\n\nLooks everywhere, and\nreturns a list."
    assert _descriptions(t) == {"origin": None, "destination": None}


def test_numpy_entry_naming_several_parameters_describes_each() -> None:
    doc = """Find flights.

    Parameters
    ----------
    origin, destination : str
        A city name.
    """
    assert parse_docstring(doc)[1] == {"origin": "A city name.", "destination": "A city name."}


def test_rest_field_that_is_not_a_parameter_is_not_read_as_one() -> None:
    doc = "Find flights.\n\n:type origin: str\n:returns: The flights.\n:meta private:\n"
    assert parse_docstring(doc) == ("Find flights.", {})


CLASS_DOCS = {
    "google": """A place on the map.

        Attributes:
            lat: Latitude in
                degrees.
            lon (float): Longitude in degrees.
        """,
    "rest": """A place on the map.

        :param lat: Latitude in
            degrees.
        :ivar lon: Longitude in degrees.
        """,
    "numpy": """A place on the map.

        Parameters
        ----------
        lat : float
            Latitude in
            degrees.
        lon : float
            Longitude in degrees.
        """,
}


def _place_classes(doc: str) -> tuple[type, type]:
    @dataclasses.dataclass
    class Place:
        lat: float
        lon: float

    @dataclasses.dataclass
    class Trip:
        """A trip."""

        stops: list[Place]
        name: str = "trip"

    Place.__doc__ = doc
    return Place, Trip


FIELD_TEXTS = {"lat": "Latitude in degrees.", "lon": "Longitude in degrees."}


@pytest.mark.parametrize("doc", list(CLASS_DOCS.values()), ids=list(CLASS_DOCS))
def test_nested_dataclass_fields_are_described_in_defs(doc: str) -> None:
    place, trip = _place_classes(doc)

    def plan(trip: trip, start: place) -> str:  # type: ignore[valid-type]
        """Plan a trip.

        :param trip: The trip to plan.
        """
        return "ok"

    t = create_tool_from_function(plan)
    defs = t.parameters["$defs"]
    assert defs["Place"]["description"] == "A place on the map."
    assert {n: p.get("description") for n, p in defs["Place"]["properties"].items()} == FIELD_TEXTS
    assert defs["Trip"]["description"] == "A trip."
    assert t.parameters["properties"]["trip"]["description"] == "The trip to plan."


@pytest.mark.parametrize("doc", list(CLASS_DOCS.values()), ids=list(CLASS_DOCS))
def test_component_tool_describes_nested_dataclass_fields(doc: str) -> None:
    place, _ = _place_classes(doc)

    @component
    class Locate:
        """Locate a place."""

        @component.output_types(text=str)
        def run(self, where: place) -> dict[str, Any]:  # type: ignore[valid-type]
            return {"text": f"{where.lat},{where.lon}"}  # type: ignore[attr-defined]

    t = ComponentTool(Locate())
    props = t.parameters["$defs"]["Place"]["properties"]
    assert {n: p.get("description") for n, p in props.items()} == FIELD_TEXTS


def test_dataclass_field_description_given_by_annotated_wins_over_the_docstring() -> None:
    from typing import Annotated

    from pydantic import Field

    @dataclasses.dataclass
    class Place:
        """A place.

        :param lat: From the docstring.
        """

        lat: Annotated[float, Field(description="From the field.")]

    def locate(where: Place) -> str:
        return "ok"

    t = create_tool_from_function(locate)
    assert t.parameters["$defs"]["Place"]["properties"]["lat"]["description"] == "From the field."


def test_dataclass_without_docstring_sections_keeps_its_description() -> None:
    @dataclasses.dataclass
    class Place:
        """Just a place."""

        lat: float

    def locate(where: Place) -> str:
        return "ok"

    defs = create_tool_from_function(locate).parameters["$defs"]
    assert defs["Place"]["description"] == "Just a place."
    assert "description" not in defs["Place"]["properties"]["lat"]
