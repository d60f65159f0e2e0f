"""Fixtures of the service tests."""

from tests.server._resumer_fixtures import _nothing_sent, any_store, service_store_url, sqlite_store, workers  # noqa: F401
from tests.stores.conftest import postgres_database, postgres_dsn, postgres_server_dsn  # noqa: F401 - fixtures
