"""The error of agent files, and the one place a failure while building a part of one becomes it."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence

from handrail.errors import ConfigurationError, HandrailError, SerializationError

__all__ = ["SpecError", "building", "dotted"]

Location = tuple[str | int, ...]


class SpecError(ConfigurationError):
    """An agent file that cannot be read, validated or built; the message names file, line and field.

    Attributes:
        location: The path of the field at fault inside the file (keys and list indexes; empty when the
            file as a whole is at fault or the error does not come from a file's field).
    """

    def __init__(self, message: str, location: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.location: Location = tuple(location)


def dotted(location: Sequence[str | int]) -> str:
    """A field path as the messages write it: ``generator.init_parameters.replies``, ``tools.1``."""
    return ".".join(str(part) for part in location) or "(root)"


_MAX_DETAIL = 500


@contextlib.contextmanager
def building(
    what: str, location: Location, fields: Iterable[Location] = (), *, read_at: Location | None = None
) -> Iterator[None]:
    """Turn any failure of building one part of an agent file into a :class:`SpecError` at its field.

    Building runs code the file names: handrail's constructors and ``from_dict`` methods, and, through
    ``allowed_modules``, a user's classes, which may raise anything. Whatever they raise (``SystemExit``
    included; ``KeyboardInterrupt`` and other ``BaseException`` pass) is refused here, chained with ``from``: handrail's
    errors with their message, any other exception with its type and message.

    Args:
        what: The part, for the message (``"LlamaCppChatGenerator"``, ``"the tool 'search'"``).
        location: The field of the part (``("generator",)``, ``("tools", 1)``).
        fields: Fields inside the part; the first one whose last key the error message names (as a
            word) is the location reported, so the line is that of the setting at fault when it can be told.
        read_at: Where the dict a ``from_dict`` reads sits in the file (``("generator",)``): a
            :class:`~handrail.errors.SerializationError` that names its field by ``path`` (keys and indexes inside
            that dict) is reported at ``read_at + path``, the exact field and its line. Give it only when the
            part is built by ``from_dict`` of the file's own block.

    Raises:
        SpecError: With ``location`` (or the field named) as its location; a SpecError raised inside
            passes through unchanged.
    """
    try:
        yield
    except SpecError:
        raise
    except (Exception, SystemExit) as exc:  # a sys.exit() in a user's constructor too; KeyboardInterrupt passes
        detail = str(exc) if isinstance(exc, HandrailError) else f"{type(exc).__name__}: {exc}"
        if len(detail) > _MAX_DETAIL:
            detail = detail[:_MAX_DETAIL] + " …"
        at = _at(exc, detail, location, fields, read_at)
        raise SpecError(f"{dotted(at)}: {what} cannot be built from this file: {detail}", at) from exc


def _at(
    exc: BaseException, detail: str, location: Location, fields: Iterable[Location], read_at: Location | None
) -> Location:
    """The field an error of building is reported at (see :func:`building`)."""
    if read_at is not None:
        error: BaseException | None = exc
        while error is not None:  # the path may be on an error a user's from_dict chained
            if isinstance(error, SerializationError) and error.path:
                return (*read_at, *error.path)
            error = error.__cause__
    return next((f for f in fields if f and re.search(rf"\b{re.escape(str(f[-1]))}\b", detail)), location)
