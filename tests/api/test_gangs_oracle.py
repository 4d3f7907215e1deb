"""Gangs against a brute-force oracle, on random small clusters.

Each random world is 2 to 12 device nodes of 2 or 4 GPUs (two per PCIe switch, some
with NVLinks), placed in a random network of 3 levels (1 or 2 spines, each of 1 or 2
leaves, each of 1 or 2 NVLink domains; now and then a node left outside it), with
random usage from device claims (whole GPUs and GPU shares). Random gang requests are
answered by POST /group_resources/gang_candidates and checked against the brute force
below, written from the documented rules (api-ref/gangs.md). The requests: M copies of
one member request (M of 1 to 4), or members of 2 or 3 kinds (1 to 4 in all), each
member request 1 or 2 whole GPUs or a GPU share; a random required level, a preferred
level at or below it or none, shared nodes or not, both scorers.

(a) exactly the domains of the required level that can hold the members get a gang;
(b) each gang is valid: its members kind by kind, in its domain, one per node unless
    shared; on a node holding c_0 members of kind 0, c_1 of kind 1, ..., the members'
    devices are those the device route gives when c_0 members of kind 0 are claimed
    one after another, then c_1 of kind 1 on what they left, and so on;
(c) each gang is the best of its domain, found by trying every way to deal the members
    to its nodes (every set of nodes, or multiset when nodes are shared, and every way
    to deal the kinds among them): fewest domains at the preferred level and each
    narrower one (then fewest nodes, when shared), then the members' scopes, link
    strengths (100 per NVLink, 50 one switch, 30 one host bridge, 20 one NUMA node,
    10 else, summed over pairs) and scores summed; gangs come best first;
(d) a claim with the same body holds exactly the first gang's allocations, and its
    release leaves nothing.

What a node offers for each vector of counts is read from the device routes (POST
/group_resources/device_candidates limited to the node, and for shared nodes device
claims made and released, every vector tried depth first): the oracle imports nothing of
``placement.gangs`` or ``placement.devices``.
"""

import itertools
import random
import uuid

from tests.api.device_helpers import import_node, switch_box
from tests.api.gang_helpers import LEVELS, claim_gang, gangs, set_network

SEED = 20_261_129
WORLDS = 12
REQUESTS_PER_WORLD = 5
MIXED_WORLDS = 8
MIXED_REQUESTS_PER_WORLD = 3
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


def _built_world(api, rng: random.Random, prefix: str) -> dict:
    """A random world imported, used and placed in the network: node -> its domains."""
    documents, placements = _world(rng)
    for node, document in documents.items():
        import_node(api, f"{prefix}-{node}", document)
        _use(api, rng, f"{prefix}-{node}")
    placements = {f"{prefix}-{node}": path for node, path in placements.items()}
    set_network(api, {n: path for n, path in placements.items() if path})
    return placements


def _levels_and_options(rng: random.Random, request: dict) -> dict:
    """``request`` with a random required level, a preferred level at or below it (or
    none), a scorer, and shared nodes or not."""
    required = rng.randrange(len(LEVELS))
    request = {**request, "required": LEVELS[required], "scorer": rng.choice(["pack", "spread"])}
    if rng.random() < 0.7:
        request["preferred"] = LEVELS[rng.randint(required, len(LEVELS) - 1)]
    if rng.random() < 0.5:
        request["share_nodes"] = True
    return request


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


SCOPES = [None, "SamePCIe", "SameNUMA", "Node"]


def _kinds(rng: random.Random) -> list[int]:
    """Members per kind: 2 or 3 kinds, 4 members at most."""
    while True:
        kinds = [rng.randint(1, 2) for _ in range(rng.choice([2, 3]))]
        if sum(kinds) <= 4:
            return kinds


def _groups(request: dict) -> list[dict]:
    """The request's kinds as a list of {count, member}, M copies of one as one kind."""
    if isinstance(request["members"], list):
        return request["members"]
    return [{"count": request["members"], "member": request["member"]}]


def _read_choice(api, node: str, member: dict, scorer: str) -> dict | None:
    body = {"resources": member, "nodes": [node], "scorer": scorer}
    answer = api.post("/group_resources/device_candidates", json=body).json
    if not answer["candidates"]:
        return None
    candidate = answer["candidates"][0]
    return {
        "minors": sorted(d["minor"] for d in candidate["devices"]["gpu"]),
        "scope": candidate.get("scope"),
        "strength": sum(WEIGHTS[k] * n for k, n in candidate["links"]["gpu"].items()),
        "score": candidate["score"],
    }


def _hold(api, node: str, member: dict, scorer: str) -> str:
    consumer = str(uuid.uuid4())
    claimed = api.post(
        "/group_resources/device_claims",
        json={
            "resources": member,
            "nodes": [node],
            "scorer": scorer,
            "consumer_uuid": consumer,
            "project_id": "p",
            "user_id": "u",
        },
    )
    assert claimed.status_code == 200, claimed.json
    return consumer


def _offers(api, node: str, request: dict) -> dict[tuple, list[dict]]:
    """Vector of counts -> the members the node places for it, in order (kinds in order)."""
    groups = _groups(request)
    kinds = len(groups)
    offers: dict[tuple, list[dict]] = {}
    if not request.get("share_nodes"):
        for kind, group in enumerate(groups):
            choice = _read_choice(api, node, group["member"]["resources"], request["scorer"])
            if choice is not None:
                offers[tuple(int(k == kind) for k in range(kinds))] = [choice]
        return offers

    def explore(kind: int, vector: list[int], placed: list[dict]) -> None:
        if kind == kinds:
            if any(vector):
                offers[tuple(vector)] = list(placed)
            return
        explore(kind + 1, vector, placed)
        resources = groups[kind]["member"]["resources"]
        count = groups[kind]["count"]
        held = []
        for placing in range(1, count + 1):
            choice = _read_choice(api, node, resources, request["scorer"])
            if choice is None:
                break
            if placing < count or kind < kinds - 1:  # held while more are to be read
                held.append(_hold(api, node, resources, request["scorer"]))
            placed.append(choice)
            vector[kind] += 1
            explore(kind + 1, vector, placed)
        for consumer in held:
            assert api.delete(f"/allocations/{consumer}").status_code == 204
        del placed[len(placed) - vector[kind] :]
        vector[kind] = 0

    explore(0, [0] * kinds, [])
    return offers


def _dealt(nodes: list[str], request: dict):
    """Every way to deal the members to ``nodes``: node -> its vector of counts."""
    counts = [group["count"] for group in _groups(request)]
    if not request.get("share_nodes"):
        labels = [kind for kind, count in enumerate(counts) for _ in range(count)]
        for chosen in itertools.combinations(nodes, len(labels)):
            for order in set(itertools.permutations(labels)):
                yield {
                    node: tuple(int(kind == label) for kind in range(len(counts)))
                    for node, label in zip(chosen, order, strict=True)
                }
        return
    per_kind = [itertools.combinations_with_replacement(nodes, count) for count in counts]
    for combos in itertools.product(*(list(options) for options in per_kind)):
        dealt: dict[str, list[int]] = {}
        for kind, combo in enumerate(combos):
            for node in combo:
                dealt.setdefault(node, [0] * len(counts))[kind] += 1
        yield {node: tuple(vector) for node, vector in dealt.items()}


def _rank(used: list[str], members: list[dict], placements: dict, request: dict) -> tuple:
    """The rank of a gang of ``members`` on the nodes ``used``: the domain counts, then
    the summed scopes, strengths (negated) and scores (negated, by pack or spread as
    scored)."""
    key: list = []
    if "preferred" in request:
        for position in range(LEVELS.index(request["preferred"]), len(LEVELS)):
            key.append(len({placements[node][position] for node in used}))
        if request.get("share_nodes"):
            key.append(len(used))
    key.append(sum(max(SCOPES.index(m["scope"]) - 1, 0) for m in members))
    key.append(-sum(m["strength"] for m in members))
    return (tuple(key), -sum(m["score"] for m in members))


def _better_or_equal(first: tuple, second: tuple) -> bool:
    """Whether rank ``first`` is at least as good as ``second`` (scores within slack)."""
    if first[0] != second[0]:
        return first[0] < second[0]
    return first[1] <= second[1] + SCORE_SLACK


def _oracle(placements: dict, request: dict, offers: dict, seen: set[str]) -> dict:
    """Required domain -> the best rank of a gang in it (domains holding none left out).
    ``seen`` is told which rules decided (for the coverage guard)."""
    required = LEVELS.index(request["required"])
    best: dict[str, tuple] = {}
    domains = sorted({path[required] for path in placements.values() if path})
    for domain in domains:
        nodes = [
            n
            for n, path in sorted(placements.items())
            if path and path[required] == domain and offers[n]
        ]
        for dealt in _dealt(nodes, request):
            if any(vector not in offers[node] for node, vector in dealt.items()):
                continue
            members = [m for node, vector in sorted(dealt.items()) for m in offers[node][vector]]
            key = _rank(sorted(dealt), members, placements, request)
            if domain in best and key[0] != best[domain][0] and "preferred" in request:
                seen.add("domain counts")
            if domain not in best or not _better_or_equal(best[domain], key):
                best[domain] = key
    if domains and len(best) < len(domains):
        seen.add("a domain without a gang")
    return best


def test_gangs_match_the_brute_force(api):
    seen: set[str] = set()
    for world in range(WORLDS):
        rng = random.Random(SEED + world)
        placements = _built_world(api, rng, f"w{world}")
        for _ in range(REQUESTS_PER_WORLD):
            members = {"members": rng.randint(1, 4), "member": {"resources": _member(rng)}}
            _check_request(api, placements, _levels_and_options(rng, members), seen)
    # Coverage guard: each rule decided somewhere.
    assert seen == {
        "domain counts",
        "a domain without a gang",
        "members share a node",
        "a gang of 3 or more",
        "several gangs ranked",
    }, seen


def test_gangs_of_several_kinds_match_the_brute_force(api):
    seen: set[str] = set()
    for world in range(MIXED_WORLDS):
        rng = random.Random(SEED + 1000 + world)
        placements = _built_world(api, rng, f"m{world}")
        for _ in range(MIXED_REQUESTS_PER_WORLD):
            groups = [{"count": k, "member": {"resources": _member(rng)}} for k in _kinds(rng)]
            _check_request(api, placements, _levels_and_options(rng, {"members": groups}), seen)
    assert seen == {
        "domain counts",
        "a domain without a gang",
        "members share a node",
        "kinds share a node",
        "a gang of 3 or more",
        "three kinds",
        "several gangs ranked",
    }, seen


def _check_request(api, placements: dict, request: dict, seen: set[str]) -> None:
    offers = {node: _offers(api, node, request) for node, path in placements.items() if path}
    best = _oracle(placements, request, offers, seen)
    answer = gangs(api, request)
    answered = {gang["required"]["domain"]: gang for gang in answer["gangs"]}
    assert set(answered) == set(best), (request, answer)  # (a)
    if len(_groups(request)) == 3:
        seen.add("three kinds")
    ranks = []
    for domain, gang in answered.items():
        rank = _check_gang(gang, request, placements, offers, seen)
        assert _better_or_equal(rank, best[domain]), (request, gang, best[domain])  # (c)
        ranks.append(rank)
    for first, second in itertools.pairwise(ranks):
        assert _better_or_equal(first, second)
        seen.add("several gangs ranked")
    if answer["gangs"]:  # (d)
        _check_claim_and_release(api, request, answer["gangs"][0])


def _check_gang(gang: dict, request: dict, placements: dict, offers: dict, seen: set) -> tuple:
    """(b): the members kind by kind, each in the domain, each node's members the node's
    offer for its vector of counts; the gang's rank."""
    groups = _groups(request)
    required = LEVELS.index(request["required"])
    expected_kinds = [kind for kind, group in enumerate(groups) for _ in range(group["count"])]
    assert [m["kind"] for m in gang["members"]] == expected_kinds
    vectors: dict[str, list[int]] = {}
    for member in gang["members"]:
        assert placements[member["node"]][required] == gang["required"]["domain"]
        vectors.setdefault(member["node"], [0] * len(groups))[member["kind"]] += 1
    if not request.get("share_nodes"):
        assert all(sum(vector) == 1 for vector in vectors.values())
    if any(sum(vector) > 1 for vector in vectors.values()):
        seen.add("members share a node")
    if any(sum(1 for count in vector if count) > 1 for vector in vectors.values()):
        seen.add("kinds share a node")
    if len(gang["members"]) >= 3:
        seen.add("a gang of 3 or more")
    placed_so_far: dict[tuple[str, int], int] = {}
    for member in gang["members"]:
        node, kind = member["node"], member["kind"]
        vector = vectors[node]
        position = sum(vector[:kind]) + placed_so_far.get((node, kind), 0)
        placed_so_far[(node, kind)] = placed_so_far.get((node, kind), 0) + 1
        expected = offers[node][tuple(vector)][position]["minors"]
        assert sorted(d["minor"] for d in member["devices"]["gpu"]) == expected
    members = [m for node in sorted(vectors) for m in offers[node][tuple(vectors[node])]]
    return _rank(sorted(vectors), members, placements, request)


def _check_claim_and_release(api, request: dict, first: dict) -> None:
    """(d): a claim of the same body holds the first gang's allocations; its release
    leaves nothing."""
    claimed, _ = claim_gang(api, request)
    for member, consumer in zip(first["members"], claimed["consumer_uuids"], strict=True):
        held = api.get(f"/allocations/{consumer}").json["allocations"]
        assert held == {
            uuid: {"resources": entry["resources"]} for uuid, entry in member["allocations"].items()
        } or _same_amounts(held, member["allocations"])
    assert api.delete(f"/group_resources/gangs/{claimed['gang_uuid']}").status_code == 204
    for consumer in claimed["consumer_uuids"]:
        assert api.get(f"/allocations/{consumer}").json["allocations"] == {}


def _same_amounts(held: dict, expected: dict) -> bool:
    return {p: v["resources"] for p, v in held.items()} == {
        p: v["resources"] for p, v in expected.items()
    }
