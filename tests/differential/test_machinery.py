"""The runner and the comparison on canned answers: no database, no upstream.

A fake target answers from a small dict of provider generations, so each test can
make the two sides differ in exactly one way and check that the comparison says so
(or that what must be ignored is ignored)."""

import json

from tests.differential.compare import first_difference, upstream_faults
from tests.differential.runner import Reply, run
from tests.differential.scenario import (
    CN1,
    INSTANCE1,
    SORTED_FIRST,
    Generation,
    Merged,
    get,
    header,
    joined,
    post,
    put,
    ref,
    scenario,
)


class FakeTarget:
    """Providers with generations; a PUT of traits bumps by ``bump``; every other
    answer is given by ``answers`` ({(method, path): (status, body, headers)})."""

    def __init__(self, bump=1, answers=None, request_id="req-1", host="http://a.example"):
        self.generations = {CN1: 0}
        self.bump = bump
        self.answers = answers or {}
        self.request_id = request_id
        self.host = host
        self.sent: list[tuple[str, str, object]] = []

    def send(self, method, path, headers, data):
        body = json.loads(data) if data else None
        self.sent.append((method, path, body))
        if (method, path) in self.answers:
            status, answer, extra = self.answers[(method, path)]
            return Reply(status, extra, json.dumps(answer) if answer is not None else "")
        if path == "/resource_providers":
            listed = [{"uuid": u, "generation": g} for u, g in self.generations.items()]
            return self._json(200, {"resource_providers": listed})
        if path.startswith("/allocations/"):
            return self._json(200, {"allocations": {}})
        if method == "PUT" and path.endswith("/traits"):
            if body["resource_provider_generation"] != self.generations[CN1]:
                return self._json(409, self._error(409, "placement.concurrent_update"))
            self.generations[CN1] += self.bump
            traits = body["traits"]
            return self._json(200, {"traits": traits, "resource_provider_generation": 1})
        return self._json(404, self._error(404, "placement.undefined_code"))

    def _error(self, status, code):
        return {
            "errors": [
                {
                    "status": status,
                    "title": "Whatever",
                    "detail": f"text {self.request_id}",
                    "request_id": self.request_id,
                    "code": code,
                }
            ]
        }

    @staticmethod
    def _json(status, body):
        return Reply(status, {"content-type": "application/json"}, json.dumps(body))


SET_TRAITS = put(
    f"/resource_providers/{CN1}/traits",
    "1.39",
    {"traits": ["B", "A"], "resource_provider_generation": Generation(CN1)},
    label="set",
)


def test_the_same_answers_do_not_differ():
    case = scenario("same", get("/resource_providers"), SET_TRAITS)
    assert first_difference(run(case, FakeTarget()), run(case, FakeTarget())) is None


def test_a_generation_changed_differently_is_the_difference():
    case = scenario("bump", get("/resource_providers"), SET_TRAITS, get("/resource_providers"))
    difference = first_difference(run(case, FakeTarget(bump=1)), run(case, FakeTarget(bump=2)))
    assert difference is not None
    assert (difference.index, difference.where) == (1, "set")
    assert difference.aspects == ["generations read back"]
    report = difference.report("bump", 3)
    assert "<cn1>=1" in report and "<cn1>=2" in report


def test_list_order_request_ids_and_error_texts_are_not_compared():
    case = scenario("noise", get("/traits", label="list"), get("/nowhere"))
    ordered = {("GET", "/traits"): (200, {"traits": ["A", "B"]}, {})}
    reversed_ = {("GET", "/traits"): (200, {"traits": ["B", "A"]}, {})}
    upstream = run(case, FakeTarget(answers=ordered, request_id="req-1"))
    ours = run(case, FakeTarget(answers=reversed_, request_id="req-2"))
    assert first_difference(upstream, ours) is None


def test_an_error_code_counts_from_1_23_only():
    def answering(code):
        error = {"errors": [{"status": 400, "code": code, "detail": "x"}]}
        return FakeTarget(answers={("GET", "/x"): (400, error, {})})

    old = scenario("old", get("/x", "1.22"))
    new = scenario("new", get("/x", "1.23"))
    assert first_difference(run(old, answering("a")), run(old, answering("b"))) is None
    difference = first_difference(run(new, answering("a")), run(new, answering("b")))
    assert difference is not None and difference.aspects == ["body"]


def test_the_location_host_is_ignored_and_generated_uuids_are_numbered():
    def creating(uuid, host):
        headers = {"location": f"{host}/resource_providers/{uuid}"}
        return FakeTarget(answers={("POST", "/resource_providers"): (201, None, headers)})

    case = scenario(
        "create",
        post("/resource_providers", "1.0", {"name": "x"}, label="create"),
        get(header("create", "Location"), "1.0"),
    )
    first = "11111111-1111-4111-8111-111111111111"
    second = "22222222-2222-4222-8222-222222222222"
    upstream = creating(first, "http://127.0.0.1:1234")
    ours = creating(second, "http://localhost")
    assert first_difference(run(case, upstream), run(case, ours)) is None
    # The Location was followed on each side, without its host.
    assert upstream.sent[-2][1] == f"/resource_providers/{first}"
    assert ours.sent[-2][1] == f"/resource_providers/{second}"


def test_references_resolve_against_the_same_sides_answers():
    requests = [{"allocations": {"b": 1}}, {"allocations": {"a": 1}}]
    answers = {
        ("GET", "/allocation_candidates"): (200, {"allocation_requests": requests}, {}),
        ("GET", "/made"): (200, {"id": "x1"}, {}),
    }
    target = FakeTarget(answers=answers)
    case = scenario(
        "refs",
        get("/allocation_candidates", label="candidates"),
        get("/made", label="made"),
        put(
            f"/allocations/{INSTANCE1}",
            "1.39",
            Merged(ref("candidates", "allocation_requests", SORTED_FIRST), {"project_id": "p"}),
        ),
        get(joined("/things/", ref("made", "id"))),
    )
    run(case, target)
    puts = [body for method, _, body in target.sent if method == "PUT"]
    assert puts == [{"allocations": {"a": 1}, "project_id": "p"}]
    assert ("GET", "/things/x1", None) in target.sent


def test_an_unresolvable_reference_on_upstream_breaks_the_scenario():
    answers = {("GET", "/allocation_candidates"): (200, {"allocation_requests": []}, {})}
    case = scenario(
        "empty",
        get("/allocation_candidates", label="candidates"),
        put(f"/allocations/{INSTANCE1}", "1.39", ref("candidates", "allocation_requests", 0)),
    )
    faults = upstream_faults(run(case, FakeTarget(answers=answers)))
    assert len(faults) == 1 and "unresolvable" in faults[0]


def test_a_server_error_upstream_breaks_the_scenario():
    answers = {("GET", "/boom"): (500, {"errors": [{"status": 500}]}, {})}
    faults = upstream_faults(run(scenario("boom", get("/boom")), FakeTarget(answers=answers)))
    assert len(faults) == 1 and "500" in faults[0]
