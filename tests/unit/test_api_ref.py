"""The API reference (api-ref/*.md) documents exactly the routes in placement.routes.

Each route and method is one heading ``### METHOD /path`` with Flask's ``<name>``
written ``{name}``. An undocumented route, or a documented one that no longer
exists, fails here; so does an error code missing from api-ref/README.md.
"""

import pathlib
import re

from placement import errors
from placement.routes import METRICS_PATH, OUTSIDE_THE_API, scheduler_extender_routes
from placement.routes import ROUTES as API_ROUTES

# The API's routes and kube-scheduler's extender verbs (at the default prefix).
ROUTES = {**API_ROUTES, **scheduler_extender_routes()}

API_REF = pathlib.Path(__file__).resolve().parents[2] / "api-ref"
HEADING = re.compile(r"^###\s+([A-Z]+)\s+(/\S*)\s*$")
FLASK_VARIABLE = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def _documented_routes() -> dict[tuple[str, str], list[str]]:
    """(method, path) -> the files (and lines) whose headings document it."""
    found: dict[tuple[str, str], list[str]] = {}
    for page in sorted(API_REF.glob("*.md")):
        in_fence = False
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            match = None if in_fence else HEADING.match(line)
            if match:
                found.setdefault((match[1], match[2]), []).append(f"{page.name}:{number}")
    return found


def _routed() -> set[tuple[str, str]]:
    return (
        {
            (method, FLASK_VARIABLE.sub(r"{\1}", path))
            for path, methods in ROUTES.items()
            for method in methods
        }
        | {("GET", path) for path in OUTSIDE_THE_API}
        | {("GET", METRICS_PATH)}
    )


def test_api_ref_directory_exists():
    assert (API_REF / "README.md").is_file()


def test_every_route_is_documented_and_every_documented_route_exists():
    documented = set(_documented_routes())
    routed = _routed()
    undocumented = sorted(routed - documented)
    stale = sorted(documented - routed)
    assert not undocumented, f"routes with no '### METHOD /path' heading: {undocumented}"
    assert not stale, f"api-ref/ documents routes that placement.routes does not have: {stale}"


def test_each_route_is_documented_once():
    repeated = {route: where for route, where in _documented_routes().items() if len(where) > 1}
    assert not repeated, f"routes documented more than once: {repeated}"


def test_every_error_code_is_in_the_readme():
    readme = (API_REF / "README.md").read_text(encoding="utf-8")
    codes = {
        value
        for name, value in vars(errors).items()
        if name.isupper() and isinstance(value, str) and value.startswith("placement.")
    }
    assert errors.DEFAULT in codes  # the scan above really finds the constants
    missing = sorted(code for code in codes if f"`{code}`" not in readme)
    assert not missing, f"error codes not described in api-ref/README.md: {missing}"
