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

from tests.upstream import (
    UpstreamUnavailable,
    require_upstream,
    upstream_package_dir,
    upstream_server,
)
from tests.upstream.gabbi_fixtures import PlacementClient, bind_fixtures

# Files not run, by name pattern, and why.
EXCLUDED = {
    "*-policy.yaml": "policy files aside: they need policy rules set on the server",
    "*-legacy-rbac.yaml": "policy files aside: they need the legacy RBAC policy defaults",
    "*-secure-rbac.yaml": "policy files aside: they need the secure RBAC policy defaults",
    "cors.yaml": (
        "CORSFixture turns on upstream's CORS middleware, which is server configuration that "
        "no API request can set; this service has no CORS support to turn on"
    ),
}


def wording(expected: str) -> str:
    """Why a test fails when the status is right and only the words differ."""
    return f"same status; upstream's message says {expected!r}, ours words it otherwise"


def schema_wording(expected: str) -> str:
    """Why a test fails that expects the words of upstream's JSON-schema validator."""
    return f"same status; upstream's message quotes jsonschema ({expected!r}), ours does not"



# Tests of included files that fail against this service, on both backends:
# {file: {test name: why}}. A test that now passes must be removed from here.
KNOWN_FAILURES: dict[str, dict[str, str]] = {
    "aggregate.yaml": {
        "put same aggregates twice": schema_wording("has non-unique elements"),
    },
    "allocation-candidates-any-traits.yaml": {
        "the 'in:' trait query is not supported yet": (
            "required=in:... before 1.39 is read as a trait named 'in:CUSTOM_FOO' (No such "
            "trait); upstream: 'The format 'in:...' only supported since microversion 1.39.'"
        ),
        "the 'in:' trait query is not supported yet in named request group": (
            "requiredX=in:... before 1.39: as above, 'No such trait(s): in:CUSTOM_FOO.'"
        ),
    },
    "allocation-candidates-member-of.yaml": {
        "get bad member_of microversion": schema_wording("'member_of' was unexpected"),
        "get allocation candidates no 'in:' for multiple member_of": wording(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword"
        ),
        "verify microversion fail for multiple member_of params": wording(
            "Multiple member_of parameters are not supported"
        ),
        "negative agg error on old microversion with ! prefix": wording(
            "Forbidden member_of parameters are not supported in the specified microversion"
        ),
        "negative agg error on old microversion with !in prefix": wording(
            "Forbidden member_of parameters are not supported in the specified microversion"
        ),
        "negative agg error on orphaned queryparam": wording(
            "All member_of parameters must be associated with resources"
        ),
    },
    "allocation-candidates-root-required.yaml": {
        "root_required before microversion": schema_wording(
            "'root_required' does not match any of the regexes"
        ),
        "multiple root_required is an error": wording(
            "Query parameter 'root_required' may be specified only once."
        ),
    },
    "allocation-candidates.yaml": {
        "get allocation candidates no resources": schema_wording(
            "'resources' is a required property"
        ),
        "get bad resource class": wording("Invalid resource class in resources parameter"),
        "get bad limit microversion": schema_wording("'limit' was unexpected"),
        "get bad limit type": schema_wording("Failed validating 'pattern'"),
        "get bad limit value negative": schema_wording("Failed validating 'pattern'"),
        "get bad limit value zero": schema_wording("Failed validating 'pattern'"),
        "get allocation candidates with required traits in old version": schema_wording(
            "'required' was unexpected"
        ),
        "get allocation candidates with empty required value 1.22": wording(
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC."
        ),
        "get allocation candidates with forbidden trait pre-forbidden": (
            "required=!CUSTOM_MAGIC at 1.21 answers 'No such trait(s): !CUSTOM_MAGIC.'; upstream: "
            "'Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC.'"
        ),
        "get allocation candidates in tree with invalid uuid": wording(
            "Expected 'in_tree' parameter to be a format of uuid"
        ),
        "get allocation candidates in tree granular error orphaned": wording(
            "All request groups must specify resources."
        ),
    },
    "allocations-1-12.yaml": {
        "put resource provider not uuid": schema_wording("does not match any of the regexes"),
        "put resource class not valid": schema_wording("does not match any of the regexes"),
    },
    "allocations-mappings.yaml": {
        "put allocation mapping bad form": schema_wording(
            "JSON does not validate: 'beta' is not of type 'array'"
        ),
    },
    "allocations-post.yaml": {
        "fail resource class not in inventory": wording("Inventory for 'PCI_DEVICE' on"),
        "fail resource class not exist": wording("No such resource class CUSTOM_PONY"),
    },
    "allocations.yaml": {
        "put allocation bad resource class": wording(
            "Unable to allocate inventory for consumer ...: No such resource class COWS"
        ),
    },
    "basic-http.yaml": {
        "405 on bad method at root": "405 Allow header is 'HEAD, GET'; upstream: 'GET'",
        "405 on bad method on app": "405 Allow header is 'POST, HEAD, GET'; upstream: GET, POST",
        "405 on bad options method on app": (
            "OPTIONS: the 405's Allow is 'POST, HEAD, GET'; upstream: GET, POST"
        ),
        "post resource provider missing content-type": wording("content-type header required"),
        "PUT resource provider no body": (
            "PUT without body or Content-Type answers 404 (provider looked up first); upstream "
            "415 'The media type None is not supported, use application/json'"
        ),
        "non inventory sub resource provider path": wording("The resource could not be found."),
        "bad content length not int": wording("content-length header must be an integer"),
    },
    "bug-1674694.yaml": {
        "404 with other accept": "Accept: text/html: the 404 is JSON; upstream answers text/html",
    },
    "granular.yaml": {
        "numbered resources bad microversion": schema_wording("'resources1' was unexpected"),
        "numbered traits bad microversion": schema_wording("'required2' was unexpected"),
        "numbered member_of bad microversion": schema_wording("'member_of3' was unexpected"),
        "group_policy bad microversion": schema_wording("'group_policy' was unexpected"),
        "bogus numbering": schema_wording("'resources01' does not match any of the regexes"),
        "bogus suffix": schema_wording("'resources1@' does not match any of the regexes"),
        "bogus length": schema_wording("'resources_...' does not match any of the regexes"),
        "invalid group_policy value": schema_wording("'bogus' is not one of ['none', 'isolate']"),
        "orphaned traits keys": wording(
            "Found the following orphaned traits keys: required, required1"
        ),
        "orphaned member_of keys": wording(
            "Found the following orphaned member_of keys: member_of, member_of3"
        ),
        "at least one request group required": wording(
            "At least one request group (`resources` or `resources{$S}`) is required."
        ),
    },
    "inventory.yaml": {
        "post a conflicting capacity inventory": wording(
            "Unable to create inventory for resource provider"
        ),
        "post inventory bad resource class": wording("No such resource class NO_CLASS_14"),
        "delete inventory again": wording("No inventory of class IPV4_ADDRESS found for delete"),
        "get missing inventory class": wording("No inventory of class IPV4_ADDRESS for <rp>"),
        "get invalid inventory class": wording("No inventory of class HOUSE for <rp>"),
        "put all inventory unknown resource class": wording("Unknown resource class in inventory"),
    },
    "microversion.yaml": {
        "other accept header bad version": (
            "Accept: text/html: the 406 is JSON; upstream answers text/html"
        ),
    },
    "reshaper.yaml": {
        "bad rp gen": wording("... actual: 5, given: 4"),
        "target resource class not found": wording("No such resource class DISK_OF_STEEL"),
    },
    "resource-class-in-use.yaml": {
        "fail delete resource class allocations": wording("Error in delete resource class"),
        "fail delete resource class inventory": wording("Error in delete resource class"),
    },
    "resource-classes-1-7.yaml": {
        "fail to put non custom class": schema_wording("Failed validating 'pattern'"),
        "try to put standard class": schema_wording("Failed validating 'pattern'"),
        "try to put too long class": schema_wording("Failed validating 'maxLength'"),
    },
    "resource-classes.yaml": {
        "update custom resource class to already existing custom resource class name": wording(
            "Resource class already exists"
        ),
    },
    "resource-provider-aggregates.yaml": {
        "error trying multiple member_of params prior correct microversion": wording(
            "Multiple member_of parameters are not supported"
        ),
        "negative agg error on old microversion with ! prefix": wording(
            "Forbidden member_of parameters are not supported in the specified microversion"
        ),
        "negative agg error on old microversion with !in prefix": wording(
            "Forbidden member_of parameters are not supported in the specified microversion"
        ),
    },
    "resource-provider-any-traits.yaml": {
        "the 'in:' trait query is not supported yet": (
            "GET /resource_providers?required=in:... before 1.39: 'No such trait(s): in:...'"
        ),
    },
    "resource-provider-resources-query.yaml": {
        "list resource providers providing a resources filter with non-integer amount": wording(
            "Requested resource VCPU expected positive integer amount."
        ),
        "list resource providers providing a resources filter with negative amount": wording(
            "Requested resource VCPU requires amount >= 1."
        ),
        "list resource providers providing a resource class not existing": wording(
            "Invalid resource class in resources parameter"
        ),
        "list resource providers providing a bad trailing comma": wording("Got: ."),
    },
    "resource-provider.yaml": {
        "route not found non json": wording("The resource could not be found"),
        "fail trying to self-parent": (
            "POST with parent_provider_uuid == uuid says the parent does not exist; upstream: "
            "'parent provider UUID cannot be same as UUID'"
        ),
        "update a parent provider UUID to non-existing provider": wording(
            "parent provider UUID does not exist"
        ),
        "fail trying to un-parent with old microversion": wording(
            "un-parenting a provider is not currently allowed"
        ),
        "fail trying to re-parent to a different provider with old microversion": wording(
            "re-parenting a provider is not currently allowed"
        ),
        "list providers forbidden 1.21": (
            "required=!STORAGE_DISK_SSD at 1.21 answers 'No such trait(s)'; upstream: 'Expected "
            "'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: ...'"
        ),
        "invalid 'required' parameter - blank": wording(
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC."
        ),
        "invalid 'required' parameter - contains an empty trait name": wording(
            "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC."
        ),
        "schema validation fails with 'required' parameter on old microversion": schema_wording(
            "Additional properties are not allowed"
        ),
        "delete non-existing resource provider": wording(
            "No resource provider with uuid <uuid> found for delete"
        ),
        "fail updating a parent to itself": wording(
            "creating loop in the provider tree is not allowed."
        ),
        "fail updating the parent to point to its child": wording(
            "creating loop in the provider tree is not allowed."
        ),
    },
    "traits.yaml": {
        "create a trait without custom namespace": wording(
            "The trait is invalid. A valid trait must be no longer than 255 characters, ..."
        ),
        "create a trait with invalid characters": wording(
            "The trait is invalid. A valid trait must be no longer than 255 characters, ..."
        ),
        "create a trait with name exceed max characters": wording(
            "The trait is invalid. A valid trait must be no longer than 255 characters, ..."
        ),
        "list traits with invalid parameters": schema_wording(
            "Invalid query string parameters: Additional properties are not allowed"
        ),
        "put trait 1.15 has cache headers": (
            "PUT /traits/{name} of an existing trait at 1.15 (204) has no cache-control and "
            "last-modified headers"
        ),
        "get associated traits with invalid value": wording(
            'The query parameter "associated" only accepts "true" or "false"'
        ),
        "set traits for resource provider with conflict generation": wording(
            "Resource provider's generation already changed. Please update the generation and "
            "try again."
        ),
        "set traits for resource provider with invalid type of traits": schema_wording(
            "'invalid_type' is not of type 'array'"
        ),
        "delete an in-use trait": wording(
            "The trait CUSTOM_TRAIT_1 is in use by a resource provider."
        ),
    },
    "usage.yaml": {
        "get total usages project_id less than min length": schema_wording(
            "Failed validating 'minLength'"
        ),
        "get total usages user_id less than min length": schema_wording(
            "Failed validating 'minLength'"
        ),
        "get total usages project_id exceeds max length": schema_wording(
            "Failed validating 'maxLength'"
        ),
        "get total usages user_id exceeds max length": schema_wording(
            "Failed validating 'maxLength'"
        ),
        "get total usages with additional param": schema_wording(
            "Additional properties are not allowed"
        ),
    },
}

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
BACKENDS = ("sqlite", "postgresql")


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
    with upstream_server(tmp_path) as base_url, httpx.Client(base_url=base_url) as http:
        address = urllib.parse.urlsplit(base_url)
        names, problems = run_gabbit(
            path, PlacementClient(http), host=address.hostname, port=address.port, intercept=None
        )
    check_failures(gabbit, names, problems, UPSTREAM_SOCKET_FAILURES, "upstream itself")


@pytest.mark.parametrize("fresh_service", BACKENDS, indirect=True)
@pytest.mark.parametrize("gabbit", GABBITS)
def test_service_passes_upstream_gabbit(gabbit, fresh_service):
    """Against this service exactly the known failures fail."""
    path = gabbit_path(gabbit)
    app = as_served(fresh_service)
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url=SERVICE_URL) as http:
        names, problems = run_gabbit(
            path,
            PlacementClient(http),
            host=urllib.parse.urlsplit(SERVICE_URL).hostname,
            port=80,
            intercept=lambda: app,
        )
    check_failures(gabbit, names, problems, KNOWN_FAILURES, "this service")


def test_every_upstream_gabbit_is_run_or_excluded():
    """The file lists cannot rot: each exclusion and each known failure names real files."""
    gabbit_path(GABBITS[0])
    unmatched = [pattern for pattern in EXCLUDED if not fnmatch.filter(ALL_GABBITS, pattern)]
    assert not unmatched, f"exclusions that match no upstream file: {unmatched}"
    not_run = sorted((set(KNOWN_FAILURES) | set(UPSTREAM_SOCKET_FAILURES)) - set(GABBITS))
    assert not not_run, f"known failures of files that are not run: {not_run}"
