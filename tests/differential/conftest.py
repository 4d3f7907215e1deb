"""The upstream oracle for the differential tests: one fork server per session, its
transcripts recorded ahead of the tests that compare with them."""

import os

import pytest

from tests.differential.oracle import Oracle
from tests.upstream import require_upstream


@pytest.fixture(scope="session")
def upstream(request, tmp_path_factory):
    require_upstream()
    oracle = Oracle(tmp_path_factory.mktemp("upstream"))
    # Under xdist every worker collects every test but runs only some: record on demand.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        oracle.prefetch(_selected_scenarios(request.session))
    yield oracle
    oracle.close()


def _selected_scenarios(session):
    """The scenarios of the tests this session runs, in the order it runs them."""
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "case" in callspec.params:
            yield callspec.params["case"]
