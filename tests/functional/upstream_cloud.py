"""A cloud's placement data, made through upstream openstack-placement's own API, and
everything a client can read of it: what the adoption tests carry across.

``fill`` writes as Nova and operators do: nested trees with NUMA children, a sharing
provider of disk in an aggregate, custom classes and traits, consumers of several
types, projects and users, a claim loop that takes candidates as a scheduler does,
a move of allocations from one consumer to another (a migration) and deletions.
``reads`` reads all of it back (each provider's parts, every consumer's allocations,
usages, and candidate searches), the same on any service.
"""

import json
import random
import uuid
from dataclasses import dataclass, field

import requests

from tests.conftest import Api

SHARED_DISK_AGGREGATE = "a0000000-0000-0000-0000-00000000000a"
RACK_AGGREGATE = "b0000000-0000-0000-0000-00000000000b"
CANDIDATE_QUERIES = [
    "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10",
    "resources=VCPU:2&required=HW_CPU_X86_AVX2",
    "resources1=VCPU:1&resources2=CUSTOM_FPGA:1&group_policy=none",
    "resources=VCPU:1&member_of=" + RACK_AGGREGATE,
    "resources=CUSTOM_MAGIC:1,DISK_GB:5",
    "resources=VCPU:1&required=!CUSTOM_RACK1&limit=1000",
]


@dataclass
class Response:
    status_code: int
    json: object
    headers: dict


class HttpClient:
    """The Flask test client's ``open``, over HTTP to a running server (for ``Api``)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()

    def open(self, path, method="GET", headers=None, json=None):
        answer = self.session.request(
            method, self.base_url + path, headers=headers, json=json, timeout=60
        )
        body = answer.json() if answer.content else None
        return Response(answer.status_code, body, dict(answer.headers))


@dataclass
class Cloud:
    """What ``fill`` made that the tests write to again."""

    providers: dict[str, str] = field(default_factory=dict)  # name: uuid
    consumers: list[str] = field(default_factory=list)


def fill(api: Api, seed: int = 29) -> Cloud:
    chance = random.Random(seed)
    cloud = Cloud()

    def consumer() -> str:
        made = str(uuid.UUID(int=chance.getrandbits(128)))
        cloud.consumers.append(made)
        return made

    for name in ("CUSTOM_FPGA", "CUSTOM_MAGIC"):
        assert api.put(f"/resource_classes/{name}").status_code == 201
    disk = api.create_provider("shared-disk")["uuid"]
    # Ratios a 4-byte float does not hold exactly (upstream's column on MySQL).
    api.set_inventory(disk, DISK_GB={"total": 2000, "reserved": 100, "allocation_ratio": 0.9})
    api.set_traits(disk, "MISC_SHARES_VIA_AGGREGATE")
    api.set_aggregates(disk, SHARED_DISK_AGGREGATE)
    cloud.providers["shared-disk"] = disk
    for index in range(4):
        root = api.create_provider(f"cn{index}")["uuid"]
        cloud.providers[f"cn{index}"] = root
        for numa in range(2):
            child = api.create_provider(f"cn{index}-numa{numa}", parent=root)["uuid"]
            api.set_inventory(
                child,
                VCPU={"total": 8, "allocation_ratio": 4.0},
                MEMORY_MB={
                    "total": 4096,
                    "min_unit": 256,
                    "step_size": 256,
                    "allocation_ratio": 1.1,
                },
            )
            cloud.providers[f"cn{index}-numa{numa}"] = child
        traits = ["HW_CPU_X86_AVX2"] if index % 2 == 0 else ["CUSTOM_RACK1"]
        api.set_traits(root, *traits, "COMPUTE_STATUS_DISABLED" if index == 3 else "HW_CPU_X86_SSE")
        if index < 2:
            api.set_aggregates(root, SHARED_DISK_AGGREGATE, RACK_AGGREGATE)
        else:
            api.set_inventory(root, DISK_GB=500, CUSTOM_MAGIC=3)
    fpga = api.create_provider("cn1-fpga", parent=cloud.providers["cn1"])["uuid"]
    api.set_inventory(fpga, CUSTOM_FPGA=2)
    cloud.providers["cn1-fpga"] = fpga
    _claim_loop(api, chance, consumer)
    _migrate_one(api, cloud, consumer)
    for gone in cloud.consumers[:2]:
        assert api.delete(f"/allocations/{gone}").status_code == 204
    return cloud


def _claim_loop(api: Api, chance: random.Random, consumer) -> None:
    """Claims as a scheduler makes them: the first candidate, for several projects,
    users and consumer types (and none, before microversion 1.38)."""
    for turn in range(16):
        query = CANDIDATE_QUERIES[turn % 3]
        found = api.get(f"/allocation_candidates?{query}&limit=1").json
        if not found["allocation_requests"]:
            continue
        body = {
            "allocations": found["allocation_requests"][0]["allocations"],
            "project_id": f"project-{chance.randrange(3)}",
            "user_id": f"user-{chance.randrange(2)}",
            "consumer_generation": None,
        }
        if turn % 4:
            body["consumer_type"] = chance.choice(["INSTANCE", "MIGRATION", "CUSTOM_THING"])
            answer = api.put(f"/allocations/{consumer()}", json=body)
        else:
            answer = api.put(f"/allocations/{consumer()}", json=body, version="1.36")
        assert answer.status_code == 204, answer.json


def _migrate_one(api: Api, cloud: Cloud, consumer) -> None:
    """A move: the instance's allocations go to a migration consumer and new ones are
    made for the instance, in one POST /allocations."""
    instance = cloud.consumers[-1]
    held = api.get(f"/allocations/{instance}").json
    target = cloud.providers["cn2-numa1"]
    body = {
        consumer(): {
            "allocations": held["allocations"],
            "project_id": held["project_id"],
            "user_id": held["user_id"],
            "consumer_generation": None,
            "consumer_type": "MIGRATION",
        },
        instance: {
            "allocations": {target: {"resources": {"VCPU": 1, "MEMORY_MB": 256}}},
            "project_id": held["project_id"],
            "user_id": held["user_id"],
            "consumer_generation": held["consumer_generation"],
            "consumer_type": "INSTANCE",
        },
    }
    for allocation in body.values():
        allocation["allocations"] = {
            rp: {"resources": part["resources"]} if "resources" in part else part
            for rp, part in allocation["allocations"].items()
        }
    answer = api.post("/allocations", json=body)
    assert answer.status_code == 204, answer.json


def reads(api: Api, consumers: list[str]) -> dict:
    """Every read a client can make of the cloud, by request; candidates in one order."""
    found: dict = {}

    def read(path: str, version: str | None = None) -> dict:
        answer = api.get(path, version=version)
        found[f"{version or api.version} {path}"] = (answer.status_code, _in_order(answer.json))
        return answer.json

    providers = read("/resource_providers")["resource_providers"]
    read("/resource_providers", version="1.0")
    read("/resource_classes")
    read("/traits")
    read("/traits?name=startswith:CUSTOM_")
    for provider in providers:
        base = f"/resource_providers/{provider['uuid']}"
        for part in ("", "/inventories", "/usages", "/traits", "/aggregates", "/allocations"):
            read(base + part)
        read(f"/resource_providers?in_tree={provider['uuid']}")
    for query in (
        "member_of=" + SHARED_DISK_AGGREGATE,
        "required=CUSTOM_RACK1",
        "resources=VCPU:4",
        "resources=DISK_GB:100",
    ):
        read(f"/resource_providers?{query}")
    for consumer in consumers:
        read(f"/allocations/{consumer}")
        read(f"/allocations/{consumer}", version="1.12")
    for project in range(3):
        read(f"/usages?project_id=project-{project}")
        read(f"/usages?project_id=project-{project}&user_id=user-0")
        read(f"/usages?project_id=project-{project}&consumer_type=MIGRATION")
    for query in CANDIDATE_QUERIES:
        read(f"/allocation_candidates?{query}")
    # What older clients read of the same rows.
    for version in ("1.10", "1.17", "1.29"):
        read(f"/allocation_candidates?{CANDIDATE_QUERIES[0]}", version=version)
    read("/usages?project_id=project-1", version="1.9")
    for provider in sorted(providers, key=lambda each: each["uuid"])[:3]:
        read(f"/resource_providers/{provider['uuid']}/allocations", version="1.0")
        read(f"/resource_providers/{provider['uuid']}", version="1.14")
    return found


def _in_order(body):
    """Every list put in one order: none that is read here has an order in the API
    (upstream's follows the database's plan: on PostgreSQL, the order rows were last
    updated in)."""
    if isinstance(body, dict):
        return {key: _in_order(value) for key, value in body.items()}
    if isinstance(body, list):
        return sorted(
            (_in_order(item) for item in body), key=lambda item: json.dumps(item, sort_keys=True)
        )
    return body


def differences(before: dict, after: dict) -> list[str]:
    """The requests whose answers differ, each with both answers, but for those
    upstream failed (5xx: not part of the contract) in ``before``."""
    return [
        f"{path}:\n  before: {before.get(path)}\n  after:  {after.get(path)}"
        for path in sorted(set(before) | set(after))
        if before.get(path) != after.get(path) and before.get(path, (0,))[0] < 500
    ]
