"""Gangs against a brute-force oracle, on random small clusters.

Each random world is 2 to 12 device nodes of 2 or 4 GPUs (two per PCIe switch, some
with NVLinks), placed in a random network of 3 levels (1 or 2 spines, each of 1 or 2
leaves, each of 1 or 2 NVLink domains; now and then a node left outside it), with
random usage from device claims (whole GPUs and GPU shares). Random gang requests (M
of 1 to 4, members of 1 or 2 whole GPUs or a GPU share, a random required level, a
preferred level at or below it or none, shared nodes or not, both scorers) are answered
by POST /group_resources/gang_candidates and checked against the brute force below,
written from the documented rules (api-ref/gangs.md):

(a) exactly the domains of the required level that can hold M members get a gang;
(b) each gang is valid: its members in its domain, one per node unless shared, a node's
    k-th member's devices those the device route gives on that node once its k - 1
    members before are claimed;
(c) each gang is the best of its domain, found by trying every set of nodes (every
    multiset when nodes are shared): fewest domains at the preferred level and each
    narrower one (then fewest nodes, when shared), then the members' scopes, link
    strengths (100 per NVLink, 50 one switch, 30 one host bridge, 20 one NUMA node,
    10 else, summed over pairs) and scores summed; gangs come best first;
(d) a claim with the same body holds exactly the first gang's allocations, and its
    release leaves nothing.

What a node offers is read from the device routes (POST /group_resources/device_candidates
limited to the node, and for shared nodes device claims made and released): the
oracle imports nothing of ``placement.gangs`` or ``placement.devices``.
"""

import itertools
import random
import uuid

from tests.api.device_helpers import import_node, switch_box
from tests.api.gang_helpers import LEVELS, claim_gang, gangs, set_network

SEED = 20_261_129
WORLDS = 12
REQUESTS_PER_WORLD = 5
WEIGHTS = {"nvlinks": 100, "samePCIe": 50, "sameHostBridge": 30, "sameNUMA": 20, "crossNUMA": 10}
SCORE_SLACK = 1e-5  # scores are answered to 6 decimals


def _world(rng: random.Random) -> tuple[dict, dict]:
    """(node -> device list, node -> its domains or None)."""
    cells = []
    leaf = cell = 0
    for spine in range(rng.randint(1, 2)):
        for _ in range(rng.randint(1, 2)):
            for _ in range(rng.randint(1, 2)):
                cells.append((f"s{spine}", f"l{leaf}", f"v{cell}"))
                cell += 1
            leaf += 1
    documents, placements = {}, {}
    for index in range(rng.randint(2, 12)):
        gpus = rng.choice([2, 4])
        nvlinks = [
            ((a, a + 1), rng.randint(1, 2)) for a in range(0, gpus - 1) if rng.random() < 0.4
        ]
        documents[f"node-{index:02d}"] = switch_box(
            gpus_per_switch=[2] * (gpus // 2),
            nics_per_switch=[0] * (gpus // 2),
            switches_per_numa=rng.choice([1, 2]),
            nvlinks=nvlinks,
            resources={"cpu": 16},
        )
        placements[f"node-{index:02d}"] = rng.choice(cells) if rng.random() > 0.1 else None
    return documents, placements


def _member(rng: random.Random) -> dict:
    return rng.choice(
        [{"nvidia.com/gpu": 1}, {"nvidia.com/gpu": 2}, {"kubernetes.io/gpu": 50, "cpu": 2}]
    )


def _use(api, rng: random.Random, node: str) -> None:
    for _ in range(rng.randint(0, 2)):
        body = {
            "resources": rng.choice([{"nvidia.com/gpu": 1}, {"kubernetes.io/gpu": 50}]),
            "nodes": [node],
            "consumer_uuid": str(uuid.uuid4()),
            "project_id": "p",
            "user_id": "u",
        }
        api.post("/group_resources/device_claims", json=body)


def _choices(api, node: str, member: dict, scorer: str, most: int) -> list[dict]:
    """The device route's choices on ``node`` for the 1st, 2nd, ... member (at most
    ``most``): each claimed to read the next, all released after."""
    found, held = [], []
    while len(found) < most:
        body = {"resources": member, "nodes": [node], "scorer": scorer}
        answer = api.post("/group_resources/device_candidates", json=body).json
        if not answer["candidates"]:
            break
        candidate = answer["candidates"][0]
        found.append(
            {
                "minors": sorted(d["minor"] for d in candidate["devices"]["gpu"]),
                "scope": candidate.get("scope"),
                "strength": sum(WEIGHTS[k] * n for k, n in candidate["links"]["gpu"].items()),
                "score": candidate["score"],
            }
        )
        if len(found) < most:
            consumer = str(uuid.uuid4())
            claimed = api.post(
                "/group_resources/device_claims",
                json={**body, "consumer_uuid": consumer, "project_id": "p", "user_id": "u"},
            )
            assert claimed.status_code == 200, claimed.json
            held.append(consumer)
    for consumer in held:
        assert api.delete(f"/allocations/{consumer}").status_code == 204
    return found


SCOPES = [None, "SamePCIe", "SameNUMA", "Node"]


def _key(
    counts: dict[str, int], placements: dict, request: dict, choices: dict[str, list[dict]]
) -> tuple:
    """The rank of the gang that puts ``counts[node]`` members on each node: the domain
    counts, then the summed scopes, strengths (negated) and scores (negated, by pack
    or spread as scored)."""
    used = [node for node, count in counts.items() if count]
    key: list = []
    if "preferred" in request:
        for position in range(LEVELS.index(request["preferred"]), len(LEVELS)):
            key.append(len({placements[node][position] for node in used}))
        if request.get("share_nodes"):
            key.append(len(used))
    members = [choice for node in used for choice in choices[node][: counts[node]]]
    key.append(sum(max(SCOPES.index(m["scope"]) - 1, 0) for m in members))
    key.append(-sum(m["strength"] for m in members))
    return (tuple(key), -sum(m["score"] for m in members))


def _better_or_equal(first: tuple, second: tuple) -> bool:
    """Whether rank ``first`` is at least as good as ``second`` (scores within slack)."""
    if first[0] != second[0]:
        return first[0] < second[0]
    return first[1] <= second[1] + SCORE_SLACK


def _oracle(
    placements: dict, request: dict, choices: dict[str, list[dict]], seen: set[str]
) -> dict:
    """Required domain -> the best rank of a gang in it (domains holding none left out).
    ``seen`` is told which rules decided (for the coverage guard)."""
    required = LEVELS.index(request["required"])
    members = request["members"]
    best: dict[str, tuple] = {}
    domains = sorted({path[required] for path in placements.values() if path})
    for domain in domains:
        nodes = [
            n
            for n, path in sorted(placements.items())
            if path and path[required] == domain and choices[n]
        ]
        if request.get("share_nodes"):
            gangs_tried = (
                dict(zip(*_counted(combo), strict=True))
                for combo in itertools.combinations_with_replacement(nodes, members)
            )
        else:
            gangs_tried = (
                {n: 1 for n in combo} for combo in itertools.combinations(nodes, members)
            )
        for counts in gangs_tried:
            if any(count > len(choices[node]) for node, count in counts.items()):
                continue
            key = _key(counts, placements, request, choices)
            if domain in best and key[0] != best[domain][0] and "preferred" in request:
                seen.add("domain counts")
            if domain not in best or not _better_or_equal(best[domain], key):
                best[domain] = key
    if domains and len(best) < len(domains):
        seen.add("a domain without a gang")
    return best


def _counted(combo: tuple[str, ...]) -> tuple[list[str], list[int]]:
    nodes = sorted(set(combo))
    return nodes, [combo.count(node) for node in nodes]


def test_gangs_match_the_brute_force(api):
    seen: set[str] = set()
    for world in range(WORLDS):
        _check_world(api, world, seen)
    # Coverage guard: each rule decided somewhere.
    assert seen == {
        "domain counts",
        "a domain without a gang",
        "members share a node",
        "a gang of 3 or more",
        "several gangs ranked",
    }, seen


def _check_world(api, world: int, seen: set[str]) -> None:
    rng = random.Random(SEED + world)
    documents, placements = _world(rng)
    documents = {f"w{world}-{node}": document for node, document in documents.items()}
    placements = {f"w{world}-{node}": path for node, path in placements.items()}
    for node, document in documents.items():
        import_node(api, node, document)
        _use(api, rng, node)
    set_network(api, {n: path for n, path in placements.items() if path})
    for _ in range(REQUESTS_PER_WORLD):
        required = rng.randrange(len(LEVELS))
        request = {
            "members": rng.randint(1, 4),
            "member": {"resources": _member(rng)},
            "required": LEVELS[required],
            "scorer": rng.choice(["pack", "spread"]),
        }
        if rng.random() < 0.7:
            request["preferred"] = LEVELS[rng.randint(required, len(LEVELS) - 1)]
        if rng.random() < 0.5:
            request["share_nodes"] = True
        most = request["members"] if request.get("share_nodes") else 1
        resources = request["member"]["resources"]
        choices = {
            node: _choices(api, node, resources, request["scorer"], most)
            for node, path in placements.items()
            if path
        }
        best = _oracle(placements, request, choices, seen)
        answer = gangs(api, request)
        answered = {gang["required"]["domain"]: gang for gang in answer["gangs"]}
        assert set(answered) == set(best), (request, answer)  # (a)
        ranks = []
        for domain, gang in answered.items():
            counts: dict[str, int] = {}
            for member in gang["members"]:  # (b)
                node = member["node"]
                assert placements[node][required] == domain
                counts[node] = counts.get(node, 0) + 1
                expected = choices[node][counts[node] - 1]["minors"]
                assert sorted(d["minor"] for d in member["devices"]["gpu"]) == expected
            assert sum(counts.values()) == request["members"]
            if not request.get("share_nodes"):
                assert set(counts.values()) == {1}
            if max(counts.values()) > 1:
                seen.add("members share a node")
            if request["members"] >= 3:
                seen.add("a gang of 3 or more")
            rank = _key(counts, placements, request, choices)
            assert _better_or_equal(rank, best[domain]), (request, gang, best[domain])  # (c)
            ranks.append(rank)
        for first, second in itertools.pairwise(ranks):
            assert _better_or_equal(first, second)
            seen.add("several gangs ranked")
        if answer["gangs"]:  # (d)
            claimed, gang = claim_gang(api, request)
            first = answer["gangs"][0]
            for member, consumer in zip(first["members"], claimed["consumer_uuids"], strict=True):
                held = api.get(f"/allocations/{consumer}").json["allocations"]
                assert held == {
                    uuid: {"resources": entry["resources"]}
                    for uuid, entry in member["allocations"].items()
                } or _same_amounts(held, member["allocations"])
            assert api.delete(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 204
            for consumer in claimed["consumer_uuids"]:
                assert api.get(f"/allocations/{consumer}").json["allocations"] == {}


def _same_amounts(held: dict, expected: dict) -> bool:
    return {p: v["resources"] for p, v in held.items()} == {
        p: v["resources"] for p, v in expected.items()
    }
