"""Allocation candidates stay exact across workers: gunicorn, 4 workers, both databases.

Each worker keeps its own copy of the providers (``placement.replica.world``)
and brings it up to date on every request. Here 20 small trees are built, every
worker's copy is warmed, and then, 32 times, one write is made (a claim that
fills a tree, its deletion, an inventory total, a required trait) and right after
its answer 8 concurrent GET /allocation_candidates requests are sent, which land
on different workers. Every one of them must be exactly the answer the model of
the trees gives now: the trees that fit and their usage, never an older answer.
Which worker answered each request is read from gunicorn's access log, to be
sure that several workers took part.
"""

import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest
import requests

from tests.functional.gunicorn import running_gunicorn

WORKERS = 4
TREES = 20
ROUNDS = 32
READERS = 8
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
TRAIT = "CUSTOM_WORLD_FAST"
QUERY = f"resources=DISK_GB:10&resources_C=VCPU:2&required_C={TRAIT}"


@pytest.fixture(params=["postgresql", "sqlite", "mysql"])
def service(request, empty_database_url, tmp_path):
    """The service under gunicorn; yields its base URL and its access log's path."""
    access_log = tmp_path / "access.log"
    logging = (
        "--access-logfile",
        str(access_log),
        "--access-logformat",
        "%(p)s %({x-probe}i)s %(s)s",
    )
    with running_gunicorn(empty_database_url(request.param), tmp_path, WORKERS, logging) as base:
        yield base, access_log


@dataclass
class Tree:
    """One tree as the test believes it is: a root with DISK_GB, a child with VCPU."""

    root: str
    child: str
    total: int = 4  # the child's VCPU
    used: int = 0
    trait: bool = True  # the child has TRAIT
    consumer: str | None = None  # the claim filling the child, if any

    def fits(self) -> bool:
        return self.trait and self.total - self.used >= 2


class Client:
    def __init__(self, base: str) -> None:
        self.base = base

    def call(self, method, path, body=None, expect=(200,), probe=None):
        headers = dict(HEADERS, **({"X-Probe": probe} if probe else {}))
        response = requests.request(
            method, self.base + path, json=body, headers=headers, timeout=60
        )
        assert response.status_code in expect, (method, path, response.text)
        return response

    def generation(self, provider):
        return self.call("GET", f"/resource_providers/{provider}").json()["generation"]

    def create(self, name, parent=None) -> str:
        body = {"name": name, **({"parent_provider_uuid": parent} if parent else {})}
        return self.call("POST", "/resource_providers", body).json()["uuid"]

    def inventory(self, provider, **totals):
        body = {
            "resource_provider_generation": self.generation(provider),
            "inventories": {name: {"total": total} for name, total in totals.items()},
        }
        self.call("PUT", f"/resource_providers/{provider}/inventories", body)

    def traits(self, provider, *names):
        body = {"resource_provider_generation": self.generation(provider), "traits": names}
        self.call("PUT", f"/resource_providers/{provider}/traits", body)

    def claim(self, consumer, provider, vcpus):
        body = {
            "allocations": {provider: {"resources": {"VCPU": vcpus}}},
            "project_id": "p",
            "user_id": "u",
            "consumer_generation": None,
            "consumer_type": "INSTANCE",
        }
        self.call("PUT", f"/allocations/{consumer}", body, expect=(204,))

    def candidates(self, probe: str) -> requests.Response:
        return self.call("GET", f"/allocation_candidates?{QUERY}", probe=probe)


def _expected(trees: list[Tree]) -> tuple[list, dict]:
    """The candidates (as sorted (root, child) pairs) and the summaries of the children
    the model says the answer must have."""
    fitting = [tree for tree in trees if tree.fits()]
    pairs = sorted((tree.root, tree.child) for tree in fitting)
    children = {
        tree.child: {"VCPU": {"capacity": tree.total, "used": tree.used}} for tree in fitting
    }
    return pairs, children


def _seen(body: dict) -> tuple[list, dict]:
    pairs = []
    for request in body["allocation_requests"]:
        (root,) = request["mappings"][""]
        (child,) = request["mappings"]["_C"]
        assert request["allocations"] == {
            root: {"resources": {"DISK_GB": 10}},
            child: {"resources": {"VCPU": 2}},
        }
        pairs.append((root, child))
    summaries = body["provider_summaries"]
    children = {
        uuid_: summary["resources"]
        for uuid_, summary in summaries.items()
        if summary["parent_provider_uuid"] is not None
    }
    return sorted(pairs), children


def _write(client: Client, trees: list[Tree], step: int, rng: random.Random) -> str:
    """One write of kind ``step % 4``, applied to the model too; what it did."""
    kind = step % 4
    if kind == 0:  # a new consumer fills the child of a tree that fits
        tree = rng.choice([t for t in trees if t.fits() and t.consumer is None])
        tree.consumer = str(uuid.uuid4())
        amount = tree.total - tree.used
        client.claim(tree.consumer, tree.child, amount)
        tree.used += amount
        return f"claim {amount} VCPU on tree {trees.index(tree)}"
    if kind == 1:  # a claim deleted
        tree = rng.choice([t for t in trees if t.consumer is not None])
        client.call("DELETE", f"/allocations/{tree.consumer}", expect=(204,))
        tree.consumer, tree.used = None, 0
        return f"delete the claim on tree {trees.index(tree)}"
    if kind == 2:  # an inventory total: 4 <-> 1 (never under the usage)
        tree = rng.choice([t for t in trees if t.used == 0])
        tree.total = 1 if tree.total == 4 else 4
        client.inventory(tree.child, VCPU=tree.total)
        return f"VCPU total {tree.total} on tree {trees.index(tree)}"
    tree = rng.choice(trees)  # the required trait added or removed
    tree.trait = not tree.trait
    client.traits(tree.child, *([TRAIT] if tree.trait else []))
    return f"trait {'added to' if tree.trait else 'removed from'} tree {trees.index(tree)}"


def _workers_of(access_log, prefix: str) -> dict[str, str]:
    """probe -> pid of the worker that answered it, from the access log."""
    found = {}
    for _ in range(50):  # the log is written by the workers, maybe a little later
        found = {}
        for line in access_log.read_text().splitlines():
            pid, probe, _status = line.split(" ")
            if probe.startswith(prefix):
                found[probe] = pid
        if len(found) == ROUNDS * READERS:
            break
        time.sleep(0.1)
    return found


@pytest.mark.slow
def test_every_worker_answers_from_the_latest_writes(service):
    base, access_log = service
    client = Client(base)
    client.call("PUT", f"/traits/{TRAIT}", expect=(201, 204))
    trees = []
    for index in range(TREES):
        root = client.create(f"host-{index}")
        client.inventory(root, DISK_GB=100)
        child = client.create(f"host-{index}-numa", parent=root)
        client.inventory(child, VCPU=4)
        client.traits(child, TRAIT)
        trees.append(Tree(root, child))

    rng = random.Random(20240607)
    with ThreadPoolExecutor(READERS) as pool:
        # Warm every worker's copy: many concurrent requests reach all of them.
        warm = list(pool.map(lambda i: client.candidates(f"warm-{i}"), range(4 * READERS)))
        assert {len(r.json()["allocation_requests"]) for r in warm} == {TREES}

        for step in range(ROUNDS):
            done = _write(client, trees, step, rng)
            expected = _expected(trees)
            answers = list(
                pool.map(
                    lambda i, step=step: client.candidates(f"probe-{step}-{i}"), range(READERS)
                )
            )
            bodies = [answer.json() for answer in answers]
            for reader, body in enumerate(bodies):
                assert _seen(body) == expected, (
                    f"round {step} ({done}): reader {reader} answered a stale or wrong body"
                )
            # And the readers' bodies are all the same, byte for byte.
            assert len({answer.content for answer in answers}) == 1, f"round {step} ({done})"

    answered_by = _workers_of(access_log, "probe-")
    assert len(answered_by) == ROUNDS * READERS
    # The readers of the rounds were answered by several workers, not one.
    assert len(set(answered_by.values())) >= 2, set(answered_by.values())
