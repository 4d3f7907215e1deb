"""A bounded fuzz of every route in ``placement.routes.ROUTES``: never a 5xx, and every
error in the API's format.

Each test takes one URL of the route table, seeds a small world through the API
(providers in a tree with inventories, traits, aggregates and an allocation) so that
requests reach the deeper code, then lets hypothesis send requests with any of the
URL's methods: path parts that exist, random uuids or junk; a valid, ``latest`` or
junk microversion; query strings from the API's vocabulary with junk values; JSON
bodies shaped like the real ones with fields mutated, arbitrary JSON or raw bytes;
and a random Content-Type and Accept. Derandomized, so a run is reproducible.
"""

import json
import logging
import re
import traceback
import urllib.parse
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.routes import ROUTES

# Examples per URL (across its methods) on each backend: the whole file, 27 URLs on
# SQLite and PostgreSQL, takes about 45 s.
EXAMPLES_PER_URL = 200

ROOT = "5e0c2f4a-9a1b-4c55-8d0e-1f2a3b4c5d01"
CHILD = "5e0c2f4a-9a1b-4c55-8d0e-1f2a3b4c5d02"
OTHER = "5e0c2f4a-9a1b-4c55-8d0e-1f2a3b4c5d03"
CONSUMER = "6f1d3a5b-0b2c-4d66-9e1f-2a3b4c5d6e01"
AGGREGATE = "7a2e4b6c-1c3d-4e77-8f2a-3b4c5d6e7f01"
PROVIDERS = (ROOT, CHILD, OTHER)
NODE = "fuzz-node"
DEVICE_NODE = "fuzz-device-node"

# --- Scalars -----------------------------------------------------------------------

# Text without lone surrogates (a URL or query string cannot carry one).
safe_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
huge_numbers = st.sampled_from(
    ["0", "-1", "1", "2147483648", "9223372036854775808", "1e309", "NaN", "1.5", "٣"]
)
# What an HTTP header can carry: Latin-1 without control characters.
header_text = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
    max_size=20,
)
junk = st.one_of(safe_text, huge_numbers, st.just(""), st.sampled_from(["%", "..", "/", " "]))

CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_FUZZ", "CUSTOM_MISSING", "vcpu"]
TRAITS = ["HW_CPU_X86_AVX2", "CUSTOM_FUZZ_TRAIT", "CUSTOM_MISSING", "STORAGE_DISK_SSD"]

uuids = st.one_of(st.sampled_from(PROVIDERS), st.uuids().map(str))


def _path_part(placeholder: str, path: str) -> st.SearchStrategy[str]:
    """Values for one ``<placeholder>`` of ``path``: existing ids, fresh ones, junk."""
    if placeholder == "uuid":
        known = st.sampled_from(PROVIDERS)
    elif placeholder == "consumer_uuid":
        known = st.sampled_from([CONSUMER, str(uuid.uuid4())])
    elif placeholder == "resource_class" or path.startswith("/resource_classes"):
        known = st.sampled_from(CLASSES)
    elif path.startswith("/traits"):
        known = st.sampled_from(TRAITS)
    elif "device_nodes" in path:
        known = st.sampled_from([DEVICE_NODE, "other-node"])
    else:
        known = st.sampled_from([NODE, "other-node"])
    return st.one_of(known, known, st.uuids().map(str), junk)


# --- Query strings -----------------------------------------------------------------

QUERY_KEYS = [
    "resources",
    "required",
    "member_of",
    "in_tree",
    "limit",
    "group_policy",
    "root_required",
    "same_subtree",
    "name",
    "uuid",
    "project_id",
    "user_id",
    "consumer_type",
    "associated",
    "resources1",
    "required1",
    "member_of1",
    "resources_X",
    "required_X",
    "member_of_X",
    "in_tree1",
    "resourcesX",
    "resources_",
    "in_tree_X",
    "rubbish",
]

realistic_values = st.sampled_from(
    [
        "VCPU:1",
        "VCPU:1,MEMORY_MB:512",
        "VCPU:-1",
        "VCPU:",
        ":1",
        "CUSTOM_FUZZ:1",
        "VCPU:99999999999999999999",
        "HW_CPU_X86_AVX2",
        "!HW_CPU_X86_AVX2",
        "in:HW_CPU_X86_AVX2,CUSTOM_FUZZ_TRAIT",
        "!in:HW_CPU_X86_AVX2",
        f"in:{AGGREGATE}",
        f"!in:{AGGREGATE}",
        AGGREGATE,
        ROOT,
        CHILD,
        "isolate",
        "none",
        "true",
        "false",
        "_X",
        "_X,_Y",
        "INSTANCE",
        "MIGRATION",
        "1",
        "0",
    ]
)
query_values = st.one_of(junk, realistic_values, realistic_values, uuids)
query_strings = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(QUERY_KEYS), st.sampled_from(QUERY_KEYS), junk), query_values
    ),
    max_size=5,
).map(lambda pairs: urllib.parse.urlencode(pairs, encoding="utf-8"))

# --- Headers -----------------------------------------------------------------------

# Mostly versions that reach the newest code; junk and the default (1.0) too.
valid_versions = st.integers(min_value=0, max_value=39).map(lambda minor: f"placement 1.{minor}")
recent_versions = st.integers(min_value=14, max_value=39).map(lambda minor: f"placement 1.{minor}")
junk_versions = st.one_of(
    st.sampled_from(["placement 1.40", "placement 2.0", "compute 1.2", "placement 1.010"]),
    header_text.map(lambda text: f"placement {text}"),
    header_text,
)
versions = st.one_of(
    st.sampled_from(["placement latest", "placement 1.39"]),
    recent_versions,
    recent_versions,
    recent_versions,
    valid_versions,
    junk_versions,
    st.none(),
)

content_types = st.sampled_from(
    ["application/json"] * 6
    + [
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "text/html",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
        "junk",
        None,
    ]
)
accepts = st.sampled_from(
    [None] * 6
    + ["application/json"] * 3
    + [
        "application/json",
        "*/*",
        "text/html",
        "text/html,application/json;q=0.9",
        "text/plain",
        "junk/junk;q=x",
    ]
)

# --- Bodies ------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    safe_text,
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.one_of(safe_text, st.sampled_from(CLASSES + TRAITS)), children, max_size=4
        ),
    ),
    max_leaves=12,
)

INVENTORY = {
    "total": 8,
    "reserved": 0,
    "min_unit": 1,
    "max_unit": 8,
    "step_size": 1,
    "allocation_ratio": 1.0,
}
ALLOCATIONS = {
    "allocations": {ROOT: {"resources": {"VCPU": 1}}},
    "project_id": "p",
    "user_id": "u",
    "consumer_generation": None,
    "consumer_type": "INSTANCE",
}
GROUP_RESOURCES = {"cpu": 1, "memory": "1GiB", "gpu/0/cards": 1}
DEVICES = {
    "devices": [
        {"type": "gpu", "minor": 0, "numa": 0, "pcie": 0, "memory": "16Gi", "id": "GPU-0000"}
    ]
}

# A real body for each URL that takes one (keyed by the route's path).
REAL_BODIES: dict[str, list] = {
    "/resource_providers": [
        {"name": "fuzzed", "uuid": str(uuid.UUID(int=7)), "parent_provider_uuid": ROOT}
    ],
    "/resource_providers/<uuid>": [{"name": "renamed", "parent_provider_uuid": ROOT}],
    "/resource_providers/<uuid>/inventories": [
        {"resource_provider_generation": 1, "inventories": {"VCPU": INVENTORY}},
        {"resource_provider_generation": 1, "resource_class": "DISK_GB", **INVENTORY},
    ],
    "/resource_providers/<uuid>/inventories/<resource_class>": [
        {"resource_provider_generation": 1, **INVENTORY}
    ],
    "/resource_providers/<uuid>/aggregates": [
        {"resource_provider_generation": 1, "aggregates": [AGGREGATE]},
        [AGGREGATE],
    ],
    "/resource_providers/<uuid>/traits": [
        {"resource_provider_generation": 1, "traits": ["HW_CPU_X86_AVX2"]}
    ],
    "/resource_classes": [{"name": "CUSTOM_FUZZ_NEW"}],
    "/resource_classes/<name>": [{"name": "CUSTOM_FUZZ_OTHER"}],
    "/allocations": [{CONSUMER: ALLOCATIONS, str(uuid.UUID(int=8)): ALLOCATIONS}],
    "/allocations/<consumer_uuid>": [
        ALLOCATIONS,
        {
            "allocations": [{"resource_provider": {"uuid": ROOT}, "resources": {"VCPU": 1}}],
            "project_id": "p",
            "user_id": "u",
        },
    ],
    "/reshaper": [
        {
            "inventories": {
                ROOT: {"resource_provider_generation": 1, "inventories": {"VCPU": INVENTORY}}
            },
            "allocations": {CONSUMER: ALLOCATIONS},
        }
    ],
    "/group_resources/nodes/<name>": [{"resources": GROUP_RESOURCES}],
    "/group_resources/queries": [{"resources": GROUP_RESOURCES}],
    "/group_resources/candidates": [{"resources": GROUP_RESOURCES, "limit": 2}],
    "/group_resources/claims": [
        {
            "resources": GROUP_RESOURCES,
            "consumer_uuid": str(uuid.UUID(int=9)),
            "project_id": "p",
            "user_id": "u",
        }
    ],
    "/group_resources/device_nodes/<name>": [DEVICES],
    "/group_resources/device_candidates": [{"resources": {"gpu": 1}, "annotations": {}}],
    "/group_resources/device_claims": [
        {
            "resources": {"gpu": 1},
            "annotations": {},
            "consumer_uuid": str(uuid.UUID(int=10)),
            "project_id": "p",
            "user_id": "u",
        }
    ],
}


@st.composite
def mutated(draw, body):
    """``body`` with one to three fields (anywhere in it) replaced, removed or added."""
    body = json.loads(json.dumps(body))
    containers = []
    pending = [body]
    while pending:
        item = pending.pop()
        if isinstance(item, dict | list):
            containers.append(item)
            pending.extend(item.values() if isinstance(item, dict) else item)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        target = draw(st.sampled_from(containers))
        keys = list(target.keys()) if isinstance(target, dict) else list(range(len(target)))
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "add" or not keys:
            if isinstance(target, dict):
                target[draw(st.one_of(safe_text, st.sampled_from(CLASSES)))] = draw(json_values)
            else:
                target.append(draw(json_values))
        elif action == "remove":
            del target[draw(st.sampled_from(keys))]
        else:
            target[draw(st.sampled_from(keys))] = draw(json_values)
    return body


def _bodies(path: str) -> st.SearchStrategy:
    """Request bodies (bytes, or None for no body) for a URL of the route table."""
    real = REAL_BODIES.get(path, [])
    shaped = [st.sampled_from(real), *(mutated(body) for body in real)] if real else []
    as_json = st.one_of(*shaped, *shaped, json_values).map(lambda value: json.dumps(value).encode())
    raw = st.one_of(st.binary(max_size=40), st.just(b"{"), st.just(b'{"a": 1}' * 3))
    return st.one_of(st.none(), as_json, as_json, raw)


# --- The requests ------------------------------------------------------------------

PLACEHOLDER = re.compile(r"<([a-z_]+)>")


@st.composite
def requests(draw, path: str):
    method = draw(st.sampled_from(sorted(ROUTES[path])))
    url = PLACEHOLDER.sub(
        lambda match: urllib.parse.quote(draw(_path_part(match.group(1), path)), safe=""), path
    )
    headers = {"X-Auth-Token": "admin"}
    version = draw(versions)
    if version is not None:
        headers["OpenStack-API-Version"] = version
    accept = draw(accepts)
    if accept is not None:
        headers["Accept"] = accept
    body = draw(_bodies(path))
    content_type = draw(content_types)
    if content_type is not None:
        headers["Content-Type"] = content_type
    return method, url, headers, draw(query_strings), body


@pytest.fixture
def seeded(api):
    """A tree of two providers and a lone one, with inventories, traits, an aggregate
    and an allocation; a group-resource node and a device node."""
    api.create_provider("fuzz-root", uuid=ROOT)
    api.create_provider("fuzz-child", uuid=CHILD, parent=ROOT)
    api.create_provider("fuzz-other", uuid=OTHER)
    assert api.put("/resource_classes/CUSTOM_FUZZ").status_code in (201, 204)
    api.set_inventory(ROOT, VCPU=8, MEMORY_MB=4096, DISK_GB=100)
    api.set_inventory(CHILD, CUSTOM_FUZZ=4)
    api.set_inventory(OTHER, VCPU=2)
    api.set_traits(ROOT, "HW_CPU_X86_AVX2", "CUSTOM_FUZZ_TRAIT")
    api.set_aggregates(ROOT, AGGREGATE)
    api.set_aggregates(OTHER, AGGREGATE)
    response = api.allocate(CONSUMER, {ROOT: {"VCPU": 2}, CHILD: {"CUSTOM_FUZZ": 1}})
    assert response.status_code == 204, response.json
    response = api.put(
        f"/group_resources/nodes/{NODE}",
        json={"resources": {"cpu": 4, "memory": "8GiB", "gpu/dev0/cards": 1}},
    )
    assert response.status_code in (200, 201), response.json
    response = api.put(f"/group_resources/device_nodes/{DEVICE_NODE}", json=DEVICES)
    assert response.status_code in (200, 201), response.json
    return api


def _prefers_html(headers: dict) -> bool:
    return "html" in headers.get("Accept", "")


def _tracebacks(caplog) -> str:
    return "\n".join(
        "".join(traceback.format_exception(*record.exc_info))
        for record in caplog.records
        if record.exc_info
    )


@pytest.mark.parametrize("path", list(ROUTES))
def test_no_route_answers_5xx(seeded, caplog, path):
    client = seeded.client

    @settings(
        max_examples=EXAMPLES_PER_URL,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(request=requests(path))
    def fuzz(request):
        method, url, headers, query, body = request
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            response = client.open(
                url, method=method, headers=headers, query_string=query, data=body
            )
        status = response.status_code
        described = (
            f"{method} {url}?{query} headers={headers} body={body!r} -> {status}\n"
            f"{response.get_data(as_text=True)[:500]}\n{_tracebacks(caplog)}"
        )
        assert status < 500, described
        if status >= 400 and not _prefers_html(headers):
            [error] = response.json["errors"]
            assert error["status"] == status, described
            assert {"title", "detail", "request_id"} <= error.keys(), described
            assert error["request_id"].startswith("req-"), described

    fuzz()
