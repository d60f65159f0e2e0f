"""How an OpenAI-compatible server's failures become one-line GenerationErrors naming the server.

Failures fall in four kinds, each worded for a person reading a terminal:

- the server cannot be reached (refused, unknown host, connect timeout);
- the connection broke after it was made: before the reply was complete, or in the middle of
  a streamed reply (the SDK reports both as a connection error, so the cause and whether the
  stream had started tell them apart);
- the server answered with an error status (``status_code`` set) or an error event;
- the server answered 200 with something that is not a chat completion (not JSON, no
  ``choices``, a stream without events...): the reading code raises :class:`MalformedReply`,
  which :func:`server_errors` words.

Nothing here does I/O.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

from handrail.core._urls import url_without_password
from handrail.core.secret import holds_secret, mask_secrets
from handrail.errors import GenerationError

__all__ = ["Exchange", "MalformedReply", "decoding", "server_errors"]

_SERVER = "The OpenAI-compatible server at"
# httpx errors raised after the connection was made: the server was reached, then it broke.
_BROKEN_AFTER_CONNECTING = ("ReadError", "WriteError", "CloseError", "RemoteProtocolError")


class MalformedReply(Exception):
    """The server answered, but not with a chat completion; the message says what was wrong."""


@dataclass(slots=True)
class Exchange:
    """What :func:`server_errors` needs to know about the request under way."""

    streaming: bool = False
    """True once a streamed reply has started (its response headers arrived)."""


@contextmanager
def decoding(what: str) -> Iterator[None]:
    """Report JSON the SDK could not decode as a :class:`MalformedReply` naming ``what``.

    Wrap only the SDK call that decodes (never a user callback), so no other error is renamed.
    """
    try:
        yield
    except json.JSONDecodeError as exc:
        raise MalformedReply(f"{what} is not valid JSON ({exc})") from exc


def _one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line, known secret values masked, cut to ``limit`` characters (an HTML page stays readable).

    Masking comes before the cut, so a key the server echoed cannot be left half-shown by it.
    """
    line = mask_secrets(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _loaded_errors(*names: str) -> tuple[type[BaseException], ...]:
    """The exception classes ``names`` of the HTTP libraries the SDK may use (those already loaded)."""
    found: list[type[BaseException]] = []
    for module in ("httpx", "httpx2"):
        for name in names:
            error = getattr(sys.modules.get(module), name, None)
            if isinstance(error, type) and issubclass(error, BaseException):
                found.append(error)
    return tuple(found)


def _connection_error(base_url: str, cause: BaseException | str, exchange: Exchange) -> GenerationError:
    """Word a connection failure: never made (unreachable), or broken after it was made."""
    lost = f"Lost the connection to the OpenAI-compatible server at {base_url}"
    if exchange.streaming:
        return GenerationError(f"{lost} in the middle of its streamed reply: {_one_line(cause)}", url=base_url)
    if isinstance(cause, _loaded_errors(*_BROKEN_AFTER_CONNECTING)):
        return GenerationError(f"{lost} before its reply was complete: {_one_line(cause)}", url=base_url)
    return GenerationError(f"Cannot reach the OpenAI-compatible server at {base_url}: {_one_line(cause)}", url=base_url)


def _raise(error: GenerationError, cause: BaseException) -> NoReturn:
    """Raise ``error`` from ``cause``, or from None when the SDK's error holds a known secret.

    A key the server echoed is in the SDK error's text, which a traceback would print. ``error``'s own message is
    masked when it is built (see :class:`~handrail.errors.HandrailError`).
    """
    link: BaseException | None = cause
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        if holds_secret(str(link)) or holds_secret(repr(getattr(link, "body", None))):
            raise error from None
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    raise error from cause


@contextmanager
def server_errors(base_url: str) -> Iterator[Exchange]:
    """Turn the SDK's errors and malformed replies into one-line GenerationErrors naming the server.

    The errors name ``base_url`` without its password.

    Yields:
        An :class:`Exchange`; set ``streaming`` once a streamed reply has started, so a
        connection lost after that is reported as such.

    Raises:
        GenerationError: Instead of the SDK's connection, timeout, status and API errors, the
            transport errors some SDKs let through mid-stream, and :class:`MalformedReply`.
    """
    from openai import APIConnectionError, APIError, APIStatusError, APITimeoutError

    base_url = url_without_password(base_url)
    exchange = Exchange()
    try:
        yield exchange
    except APITimeoutError as exc:
        if exchange.streaming:
            message = f"{_SERVER} {base_url} stopped sending its streamed reply (read timed out)."
        else:
            message = f"{_SERVER} {base_url} did not answer in time (request timed out)."
        _raise(GenerationError(message, url=base_url), exc)
    except APIConnectionError as exc:
        _raise(_connection_error(base_url, exc.__cause__ or exc.message, exchange), exc)
    except APIStatusError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = _one_line(body.get("message") or exc.message)
        error = GenerationError(
            f"{_SERVER} {base_url} answered HTTP {exc.status_code}: {detail}",
            url=base_url,
            status_code=exc.status_code,
        )
        _raise(error, exc)
    except APIError as exc:  # e.g. an error event inside a stream
        message = f"{_SERVER} {base_url} reported an error: {_one_line(exc.message)}"
        _raise(GenerationError(message, url=base_url), exc)
    except MalformedReply as exc:
        _raise(GenerationError(f"{_SERVER} {base_url} sent an unusable reply: {_one_line(exc)}", url=base_url), exc)
    except _loaded_errors("TransportError") as exc:  # SDKs that let a connection lost mid-stream through unwrapped
        _raise(_connection_error(base_url, exc, exchange), exc)
