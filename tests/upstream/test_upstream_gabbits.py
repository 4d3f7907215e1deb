"""Upstream's functional suite (its gabbi YAML files), run black-box against this service.

The YAML files are read at test time from the installed upstream package
(``placement/tests/functional/gabbits``); their fixtures are rebuilt over HTTP
by ``tests/upstream/gabbi_fixtures.py``. Each included file is one pytest test
per target:

- ``upstream``: upstream itself on a fresh server. Every test must pass; this
  proves that the fixtures rebuild upstream's environment faithfully.
- ``sqlite`` and ``postgresql``: this service in process, on a fresh database.
  The failing tests must be exactly the file's entries in ``KNOWN_FAILURES``:
  a new failure fails, and so does a known failure that now passes.

A file's tests run in order as one gabbi suite whose fixture starts once for
the file. Every test runs even after an earlier one failed (as under upstream's
own unittest runner), so each failure is reported on its own; a failure that
only follows from an earlier one says so in its reason.
"""

import copy
import fnmatch
import re
import unittest
import urllib.parse
from pathlib import Path

import httpx
import pytest
from gabbi import handlers, suitemaker, utils

from placement.policy import list_rules
from tests.upstream import (
    UpstreamUnavailable,
    open_policy_file,
    policy_of,
    require_upstream,
    upstream_package_dir,
    upstream_server,
)
from tests.upstream.gabbi_fixtures import PlacementClient, bind_fixtures

# Files not run, by name pattern, and why.
EXCLUDED = {
    "cors.yaml": (
        "CORSFixture turns on upstream's CORS middleware, which is server configuration that "
        "no API request can set; this service has no CORS support to turn on"
    ),
}


# Tests of included files that fail against this service, on both backends:
# {file: {test name: why}}. A test that now passes must be removed from here.
# Empty: every included test passes. A difference from upstream that one of them
# meets must be allowed by api-ref/differences.md and named here with its row.
KNOWN_FAILURES: dict[str, dict[str, str]] = {}

# Tests that cannot pass against upstream served on a socket, whatever the
# fixtures do: {file: {test name: why}}. Checked as strictly as KNOWN_FAILURES.
UPSTREAM_SOCKET_FAILURES: dict[str, dict[str, str]] = {
    "basic-http.yaml": {
        "post resource provider missing content-type": (
            "wsgiref (serve_upstream.py) sets CONTENT_TYPE=text/plain when the request has no "
            "Content-Type, so upstream answers 415 instead of 400 'content-type header required'"
        ),
        "PUT resource provider no body": (
            "wsgiref sets CONTENT_TYPE=text/plain, so upstream's 415 names text/plain, not None"
        ),
        "bad content length not int": (
            "httpx (h11) refuses to send 'Content-Length: hi mom' on a socket; in process "
            "(WSGITransport) it reaches the service"
        ),
    },
}

SERVICE_URL = "http://placement.test"
BACKENDS = ("sqlite", "postgresql", "mysql")


def _gabbits_dir() -> tuple[Path | None, str | None]:
    """Upstream's gabbi folder, or why it cannot be found (at collection time)."""
    try:
        return upstream_package_dir() / "tests" / "functional" / "gabbits", None
    except UpstreamUnavailable as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - reported by the tests, not at collection
        return None, f"cannot locate upstream's package: {exc!r}"


def excluded_reason(name: str) -> str | None:
    for pattern, reason in EXCLUDED.items():
        if fnmatch.fnmatchcase(name, pattern):
            return reason
    return None


GABBITS_DIR, GABBITS_PROBLEM = _gabbits_dir()
ALL_GABBITS = sorted(p.name for p in GABBITS_DIR.glob("*.yaml")) if GABBITS_DIR else []
GABBITS = [name for name in ALL_GABBITS if excluded_reason(name) is None] or ["(no upstream)"]


def as_served(app):
    """``app`` as a WSGI server calls it (PEP 3333): httpx's WSGITransport puts the
    percent-decoded path into PATH_INFO as text, where servers put its bytes decoded
    as latin-1, which is what Werkzeug expects (``unicode.yaml`` asks for ``/%e2%98%83``)."""

    def call(environ, start_response):
        environ["PATH_INFO"] = environ["PATH_INFO"].encode("utf-8").decode("latin-1")
        return app(environ, start_response)

    return call


def gabbit_path(name: str) -> Path:
    """The file's path, or skip (fail with CI=true) when upstream is missing."""
    require_upstream()
    if GABBITS_DIR is None:
        pytest.fail(f"upstream's gabbi files cannot be listed: {GABBITS_PROBLEM}")
    return GABBITS_DIR / name


class Outcomes(unittest.TestResult):
    """Each test's outcome by its YAML name: the passes, and why each other test did not pass.

    The reason is written while the suite runs, when the fixture's environment
    variables still resolve, so it can show the request as it was sent.
    """

    def __init__(self) -> None:
        super().__init__()
        self.passed: list[str] = []
        self.problems: dict[str, str] = {}

    def addSuccess(self, test):  # noqa: N802 - unittest's name
        self.passed.append(test.test_data["name"])

    def addExpectedFailure(self, test, err):  # noqa: N802
        self.passed.append(test.test_data["name"])

    def addFailure(self, test, err):  # noqa: N802
        self._problem(test, err[1])

    def addError(self, test, err):  # noqa: N802
        self._problem(test, err[1])

    def addSkip(self, test, reason):  # noqa: N802
        self._problem(test, f"skipped: {reason}")

    def addUnexpectedSuccess(self, test):  # noqa: N802
        self._problem(test, "passed, but the file expects it to fail (xfail)")

    def _problem(self, test, why) -> None:
        self.problems.setdefault(test.test_data["name"], describe(test, why))


def describe(test, why) -> str:
    """One line: the request, the status it got, and gabbi's complaint (shortened)."""
    complaint = re.sub(r"\s+", " ", str(why)).strip()
    if len(complaint) > 600:
        complaint = complaint[:600] + " ..."
    if not hasattr(test, "url"):  # never sent: the fixture failed
        return f"{type(why).__name__}: {complaint}" if isinstance(why, Exception) else complaint
    data = test.test_data
    query = test.replace_template(copy.deepcopy(data["query_parameters"]))
    url = test.url + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
    status = test.response["status"] if hasattr(test, "response") else "no response"
    return f"{data['method']} {url} -> {status}: {complaint}"


def run_gabbit(path: Path, client: PlacementClient, *, host, port, intercept):
    """Run one YAML file's tests in order; return every test's name and the problems."""
    suite_dict = utils.load_yaml(yaml_file=str(path))
    # Plain HTTP only: spare each test's own httpx client from loading the CA
    # bundle (~35 ms a test).
    suite_dict.setdefault("defaults", {})["cert_validate"] = False
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        path.stem,
        suite_dict,
        str(path.parent),
        host,
        port,
        bind_fixtures(client),
        intercept,
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
        test_loader_name="upstream_gabbits",
    )
    tests = list(suite)  # the suite forgets its tests as it runs them
    outcomes = Outcomes()
    try:
        suite.run(outcomes)
    finally:
        for test in tests:
            test.http.client.close()
    names = [test.test_data["name"] for test in tests]
    missing = set(names) - set(outcomes.passed) - set(outcomes.problems)
    assert not missing, f"{path.name}: tests that never reported: {sorted(missing)}"
    return names, outcomes.problems


def listing(problems: dict[str, str]) -> str:
    return "".join(f"\n  - {name}: {why}" for name, why in problems.items())


def check_failures(gabbit, names, problems, expected_failures, target) -> None:
    """The failing tests are exactly the expected ones, in both directions."""
    known = expected_failures.get(gabbit, {})
    unexpected = {name: why for name, why in problems.items() if name not in known}
    fixed = [name for name in known if name in names and name not in problems]
    stale = [name for name in known if name not in names]
    message = []
    if unexpected:
        message.append(f"{gabbit} against {target}: unexpected failures:{listing(unexpected)}")
    if fixed:
        message.append(
            f"{gabbit} against {target}: known failures that now pass "
            f"(remove them from the list): {fixed}"
        )
    if stale:
        message.append(f"{gabbit}: known failures that name no test of the file: {stale}")
    assert not message, "\n".join(message)


@pytest.mark.slow
@pytest.mark.parametrize("gabbit", GABBITS)
def test_upstream_passes_its_own_gabbit(gabbit, tmp_path):
    """Against upstream itself every test passes (but for the socket's limits): the fixtures
    rebuild its data faithfully."""
    path = gabbit_path(gabbit)
    policy = policy_of(utils.load_yaml(yaml_file=str(path)).get("fixtures", []))
    with upstream_server(tmp_path, policy) as base_url, httpx.Client(base_url=base_url) as http:
        address = urllib.parse.urlsplit(base_url)
        names, problems = run_gabbit(
            path, PlacementClient(http), host=address.hostname, port=address.port, intercept=None
        )
    check_failures(gabbit, names, problems, UPSTREAM_SOCKET_FAILURES, "upstream itself")


@pytest.mark.parametrize("fresh_service", BACKENDS, indirect=True)
@pytest.mark.parametrize("gabbit", GABBITS)
def test_service_passes_upstream_gabbit(gabbit, fresh_service, tmp_path):
    """Against this service exactly the known failures fail."""
    path = gabbit_path(gabbit)
    policy = policy_of(utils.load_yaml(yaml_file=str(path)).get("fixtures", []))
    app = as_served(fresh_service(**policy_settings(policy, tmp_path)))
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=SERVICE_URL) as http:
        names, problems = run_gabbit(
            path,
            PlacementClient(http),
            host=urllib.parse.urlsplit(SERVICE_URL).hostname,
            port=80,
            intercept=lambda: app,
        )
    check_failures(gabbit, names, problems, KNOWN_FAILURES, "this service")


def policy_settings(policy: str, folder: Path) -> dict:
    """This service's configuration for one of upstream's policies (``POLICIES``)."""
    if policy == "open":
        names = [rule.name for rule in list_rules()]
        return {"policy_file": str(open_policy_file(names, folder))}
    return {"enforce_new_defaults": policy == "secure"}


def test_every_upstream_gabbit_is_run_or_excluded():
    """The file lists cannot rot: each exclusion and each known failure names real files."""
    gabbit_path(GABBITS[0])
    unmatched = [pattern for pattern in EXCLUDED if not fnmatch.filter(ALL_GABBITS, pattern)]
    assert not unmatched, f"exclusions that match no upstream file: {unmatched}"
    not_run = sorted((set(KNOWN_FAILURES) | set(UPSTREAM_SOCKET_FAILURES)) - set(GABBITS))
    assert not not_run, f"known failures of files that are not run: {not_run}"
