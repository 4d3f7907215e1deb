"""One real Keystone for the session's Keystone tests (see ``tests.keystone``)."""

import pytest

from tests.keystone import KeystoneUnavailable, keystone_server


@pytest.fixture(scope="session")
def keystone(tmp_path_factory):
    try:
        with keystone_server(tmp_path_factory.mktemp("keystone")) as server:
            yield server
    except KeystoneUnavailable as exc:
        pytest.fail(f"Keystone could not be set up: {exc}")
