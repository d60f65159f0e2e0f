"""A URL as it may be shown: without the password it may carry.

A URL names its server in error messages, hints and records; the password a user put in it
(``http://bob:pw@host/v1``, ``postgresql://ann:pw@db/app?sslpassword=...``) must not go with it.
:func:`url_without_password` is the one place that takes it out; :func:`url_passwords` gives it, so the
caller can register it (and the forms an HTTP client sends) as secret values (then any echo of it is masked too).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote

from handrail.core._secret_values import register_secret_value

__all__ = ["register_url_passwords", "url_passwords", "url_without_password"]

_USER_PASSWORD = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/@]*):([^/@]*)@")
_QUERY_PASSWORD = re.compile(r"([?&])((?:ssl)?password)=([^&#]*)(&?)")


def url_without_password(url: str) -> str:
    """``url`` without the password of its ``user:password@`` part or its ``password`` query parameters.

    Examples:
        >>> url_without_password("http://bob:hunter2@127.0.0.1:8000/v1")
        'http://bob@127.0.0.1:8000/v1'
        >>> url_without_password("postgresql://ann:s3cret@db:5432/app?password=x&sslmode=require")
        'postgresql://ann@db:5432/app?sslmode=require'
    """
    without = _QUERY_PASSWORD.sub(r"\1", _USER_PASSWORD.sub(r"\1@", url))
    return without.rstrip("?&") if without != url else url


def url_passwords(url: str) -> list[str]:
    """The secret texts ``url`` carries, to register as secret values.

    Its ``user:password@`` part's password (as written and %-decoded) and the HTTP Basic credentials an HTTP
    client makes of it (``base64(user:password)``, which a server may echo), and its ``password`` query parameters.
    """
    found: list[str] = []
    for match in _USER_PASSWORD.finditer(url):
        user, password = unquote(match[1].split("://", 1)[1]), match[2]
        if password:
            basic = base64.b64encode(f"{user}:{unquote(password)}".encode()).decode()
            found += [password, unquote(password), basic]
    found += [unquote(m[3]) for m in _QUERY_PASSWORD.finditer(url) if m[3]] + [
        m[3] for m in _QUERY_PASSWORD.finditer(url)
    ]
    return [text for text in dict.fromkeys(found) if text]


def register_url_passwords(url: str | None) -> None:
    """Remember the secret texts ``url`` carries (:func:`url_passwords`) as secret values, so no echo shows them."""
    for text in url_passwords(url or ""):
        register_secret_value(text)
