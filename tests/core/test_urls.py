"""A URL without its password, and the secret texts it carries."""

from __future__ import annotations

import base64

import pytest

from handrail.core._urls import url_passwords, url_without_password


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://bob:hunter2@127.0.0.1:8000/v1", "http://bob@127.0.0.1:8000/v1"),
        ("https://:pw@h/v1", "https://@h/v1"),
        ("postgresql://ann:s3@db/app?password=x&sslmode=require", "postgresql://ann@db/app?sslmode=require"),
        ("http://h/v1?a=1&sslpassword=x", "http://h/v1?a=1"),
        ("http://bob@h/v1", "http://bob@h/v1"),
        ("http://h:8000/v1/x:y@z", "http://h:8000/v1/x:y@z"),  # an @ after the path is not a password
    ],
)
def test_the_password_is_left_out(url: str, shown: str) -> None:
    assert url_without_password(url) == shown


def test_the_password_as_written_decoded_and_as_basic_credentials() -> None:
    basic = base64.b64encode(b"bob:pw@x").decode()
    assert url_passwords("http://bob:pw%40x@h/v1?password=a%20b") == ["pw%40x", "pw@x", basic, "a b", "a%20b"]
    assert url_passwords("http://bob@h/v1") == []
