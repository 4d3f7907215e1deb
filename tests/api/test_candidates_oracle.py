"""The search against a brute-force oracle, on small random provider trees.

Each case builds random trees (inventories, traits, aggregates, sharing
providers, existing usage) through the API, asks random queries, and compares
the answer with every candidate the oracle finds by trying every assignment of
providers to the request's slots and checking the rules of the API reference
one by one. The oracle knows nothing of the service's search: no pruning, no
SQL, no twins.
"""

import itertools
import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from tests.api.candidate_helpers import Providers

CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
TRAITS = ("CUSTOM_A", "CUSTOM_B", "HW_NUMA_ROOT")
SHARING = "MISC_SHARES_VIA_AGGREGATE"


@dataclass
class Node:
    name: str
    parent: str | None
    inventory: dict = field(default_factory=dict)  # class -> (total, reserved, min, max, step)
    used: dict = field(default_factory=dict)
    ratio: dict = field(default_factory=dict)  # class -> allocation_ratio (1 when absent)
    traits: set = field(default_factory=set)
    aggregates: set = field(default_factory=set)


@dataclass
class Group:
    suffix: str
    resources: dict
    required: list = field(default_factory=list)  # any-of sets
    forbidden: set = field(default_factory=set)
    member_of: list = field(default_factory=list)  # any-of sets of aggregate labels
    in_tree: str | None = None


@dataclass
class Request:
    groups: list[Group]
    policy: str
    same_subtree: list[list[str]] = field(default_factory=list)
    root_required: set = field(default_factory=set)
    root_forbidden: set = field(default_factory=set)


def random_world(rng: random.Random) -> dict[str, Node]:
    nodes: dict[str, Node] = {}
    for t in range(rng.randint(1, 3)):
        names = [f"T{t}"]
        nodes[names[0]] = Node(names[0], None)
        for c in range(rng.randint(0, 4)):
            name = f"T{t}C{c}"
            nodes[name] = Node(name, rng.choice(names))
            names.append(name)
    if rng.random() < 0.6:
        nodes["S"] = Node("S", None, traits={SHARING}, aggregates={"agg1"})
    for node in nodes.values():
        for cls in rng.sample(CLASSES, rng.choice((0, 1, 2, 2, 3))):
            total = rng.choice((2, 4, 8))
            reserved, step = rng.choice((0, 0, 1)), rng.choice((1, 1, 2))
            node.inventory[cls] = (total, reserved, 1, total, step)
            if rng.random() < 0.3 and step <= total - reserved:
                node.used[cls] = step  # a claim the inventory accepts
        node.traits |= set(rng.sample(TRAITS, rng.randint(0, 2)))
        if rng.random() < 0.4:
            node.aggregates.add(rng.choice(("agg1", "agg2")))
    return nodes


def random_request(rng: random.Random, nodes: dict[str, Node]) -> Request:
    request = Request(random_groups(rng, nodes), rng.choice(("none", "isolate")))
    granular = [g.suffix for g in request.groups if g.suffix]
    if rng.random() < 0.3:
        request.groups.append(Group("_R", {}, required=[{rng.choice(TRAITS)}]))
        request.same_subtree.append(["_R", *granular[:1]])
    elif len(granular) > 1 and rng.random() < 0.4:
        request.same_subtree.append(granular)
    if rng.random() < 0.2:
        trait = rng.choice(TRAITS)
        (request.root_required if rng.random() < 0.5 else request.root_forbidden).add(trait)
    return request


def random_groups(rng: random.Random, nodes: dict[str, Node]) -> list[Group]:
    groups = [Group("", {c: rng.randint(1, 2) for c in rng.sample(CLASSES, rng.randint(1, 2))})]
    for i in range(rng.randint(0, 2)):
        groups.append(Group(f"_G{i}", {rng.choice(CLASSES): rng.randint(1, 2)}))
    for group in groups:
        if rng.random() < 0.3:
            group.required.append({rng.choice(TRAITS)})
        if rng.random() < 0.2:
            group.forbidden.add(rng.choice(TRAITS))
        group.forbidden -= {t for s in group.required for t in s}
        if rng.random() < 0.2:
            group.member_of.append({rng.choice(("agg1", "agg2"))})
        if rng.random() < 0.15:
            group.in_tree = rng.choice(sorted(nodes))
    return groups


def query_of(request: Request) -> str:
    groups = request.groups
    parts = []
    for g in groups:
        if g.resources:
            parts.append(
                f"resources{g.suffix}=" + ",".join(f"{c}:{a}" for c, a in g.resources.items())
            )
        names = [t for s in g.required for t in s] + [f"!{t}" for t in sorted(g.forbidden)]
        if names:
            parts.append(f"required{g.suffix}=" + ",".join(names))
        for any_of in g.member_of:
            parts.append(f"member_of{g.suffix}=in:" + ",".join("{" + a + "}" for a in any_of))
        if g.in_tree:
            parts.append(f"in_tree{g.suffix}=<{g.in_tree}>")
    if len(groups) > 1:
        parts.append(f"group_policy={request.policy}")
    for suffixes in request.same_subtree:
        parts.append("same_subtree=" + ",".join(suffixes))
    roots = sorted(request.root_required) + [f"!{t}" for t in sorted(request.root_forbidden)]
    if roots:
        parts.append("root_required=" + ",".join(roots))
    return "&".join(parts)


class Oracle:
    def __init__(self, nodes: dict[str, Node]) -> None:
        self.nodes = nodes

    def root(self, name: str) -> str:
        while self.nodes[name].parent:
            name = self.nodes[name].parent
        return name

    def room(self, name: str, cls: str, amount: int) -> bool:
        inventory = self.nodes[name].inventory.get(cls)
        if inventory is None:
            return False
        total, reserved, min_unit, max_unit, step = inventory
        capacity = (total - reserved) * self.nodes[name].ratio.get(cls, 1)
        used = self.nodes[name].used.get(cls, 0)
        return used + amount <= capacity and min_unit <= amount <= max_unit and amount % step == 0

    def serves(self, name: str, group: Group, cls: str | None) -> bool:
        node = self.nodes[name]
        classes = [cls] if cls else list(group.resources)
        if not all(self.room(name, c, group.resources[c]) for c in classes):
            return False
        if node.traits & group.forbidden:
            return False
        aggregates = set(node.aggregates)
        if not group.suffix:  # an aggregate on the root spans the tree
            aggregates |= self.nodes[self.root(name)].aggregates
        if any(not (s & aggregates) for s in group.member_of):
            return False
        if group.in_tree and self.root(name) != self.root(group.in_tree):
            return False
        if group.suffix and any(not (s & node.traits) for s in group.required):
            return False
        return True

    def serves_tree(self, name: str, root: str) -> bool:
        if self.root(name) == root:
            return True
        if SHARING not in self.nodes[name].traits:
            return False
        tree_aggregates = set().union(
            *(n.aggregates for n in self.nodes.values() if self.root(n.name) == root)
        )
        return bool(self.nodes[name].aggregates & tree_aggregates)

    def ancestors(self, name: str) -> list[str]:
        chain = [name]
        while self.nodes[chain[-1]].parent:
            chain.append(self.nodes[chain[-1]].parent)
        return chain

    def candidates(self, request: Request) -> Counter:
        return Counter(
            {self.render(slots, choice) for _root, slots, choice in self.valid_choices(request)}
        )

    def valid_choices(self, request: Request):
        """(root, slots, choice) for each valid choice of a provider per slot, by tree."""
        groups = request.groups
        slots = [(g, c) for g in groups if not g.suffix for c in g.resources]
        slots += [(g, None) for g in groups if g.suffix]
        roots = {self.root(n) for n in self.nodes}
        for root in roots:
            root_traits = self.nodes[root].traits
            if not request.root_required <= root_traits or request.root_forbidden & root_traits:
                continue
            options = [
                [n for n in self.nodes if self.serves_tree(n, root) and self.serves(n, g, c)]
                for g, c in slots
            ]
            for choice in itertools.product(*options):
                if self.valid(request, slots, choice):
                    yield root, slots, choice

    def valid(self, request: Request, slots, choice) -> bool:
        groups, policy = request.groups, request.policy
        for suffixes in request.same_subtree:
            tied = {n for (g, _), n in zip(slots, choice, strict=True) if g.suffix in suffixes}
            if not any(all(t in self.ancestors(o) for o in tied) for t in tied):
                return False
        unsuffixed = [n for (g, _), n in zip(slots, choice, strict=True) if not g.suffix]
        traits = set().union(*(self.nodes[n].traits for n in unsuffixed))
        if any(not (s & traits) for g in groups if not g.suffix for s in g.required):
            return False
        granular = [n for (g, _), n in zip(slots, choice, strict=True) if g.suffix]
        if policy == "isolate" and len(set(granular)) != len(granular):
            return False
        taken: Counter = Counter()
        for (g, c), n in zip(slots, choice, strict=True):
            for cls in [c] if c else g.resources:
                taken[(n, cls)] += g.resources[cls]
        return all(self.room(n, cls, amount) for (n, cls), amount in taken.items())

    @staticmethod
    def render(slots, choice) -> tuple:
        taken: Counter = Counter()
        mappings: dict[str, set] = {}
        for (g, c), n in zip(slots, choice, strict=True):
            mappings.setdefault(g.suffix, set()).add(n)
            for cls in [c] if c else g.resources:
                taken[(n, cls)] += g.resources[cls]
        return (
            tuple(sorted(taken.items())),
            tuple(sorted((s, tuple(sorted(ns))) for s, ns in mappings.items())),
        )


def build(api, nodes: dict[str, Node]) -> Providers:
    tree = Providers(api)
    for label in ("agg1", "agg2"):  # queries may name an aggregate no provider is in
        tree.aggregate(label)
    for trait in TRAITS:  # ... or a custom trait no provider has
        if trait.startswith("CUSTOM_"):
            api.put(f"/traits/{trait}")
    for node in nodes.values():
        tree.add(
            node.name,
            parent=node.parent,
            inventory={
                cls: {
                    "total": t,
                    "reserved": r,
                    "min_unit": lo,
                    "max_unit": hi,
                    "step_size": st,
                    "allocation_ratio": node.ratio.get(cls, 1.0),
                }
                for cls, (t, r, lo, hi, st) in node.inventory.items()
            },
            traits=sorted(node.traits),
            aggregates=sorted(node.aggregates),
        )
    for number, node in enumerate(nodes.values()):
        if node.used:
            consumer = f"00000000-0000-0000-0000-{number:012d}"
            claim = {
                "allocations": {tree.uuid[node.name]: {"resources": node.used}},
                "project_id": "p",
                "user_id": "u",
                "consumer_generation": None,
            }
            response = api.put(f"/allocations/{consumer}", json=claim, version="1.28")
            assert response.status_code == 204
    return tree


def rendered(tree: Providers, body: dict) -> Counter:
    return Counter(candidate_key(tree, request) for request in body["allocation_requests"])


def candidate_key(tree: Providers, request: dict) -> tuple:
    """One allocation request (1.34+) as ``Oracle.render`` writes a candidate."""
    taken = tuple(
        sorted(
            ((tree.name[uuid], cls), amount)
            for uuid, allocation in request["allocations"].items()
            for cls, amount in allocation["resources"].items()
        )
    )
    mappings = tuple(
        sorted(
            (suffix, tuple(sorted(tree.name[u] for u in uuids)))
            for suffix, uuids in request["mappings"].items()
        )
    )
    return taken, mappings


@pytest.mark.parametrize("seed", range(30))
def test_answers_equal_the_brute_force_oracle(api, seed):
    rng = random.Random(seed)
    nodes = random_world(rng)
    tree = build(api, nodes)
    oracle = Oracle(nodes)
    for _ in range(8):
        request = random_request(rng, nodes)
        query = query_of(request)

        expected = oracle.candidates(request)
        answer = rendered(tree, tree.get(query))
        assert answer == expected, query

        # With a limit: that many of the same candidates (the search stops early).
        limit = rng.randint(1, 3)
        limited = rendered(tree, tree.get(f"{query}&limit={limit}"))
        assert sum(limited.values()) == min(limit, sum(expected.values())), query
        assert not limited - expected, query
