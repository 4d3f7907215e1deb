"""The group-resource translator against a brute-force oracle, on random worlds.

Each world (one seed) is 1 to 3 nodes of 2 to 6 GPUs, flat (``gpu/devN``),
two-level (``Gpugrp0/i/gpu/devN``) or three-level (``Gpugrp1/../Gpugrp0/..``),
some of them twins, synced through HTTP. Some worlds then change inventories
(reserved, allocation_ratio, min_unit, max_unit, step_size) and take capacity
with claims and with PUT /allocations. Random requests (flat, hierarchical,
skipping levels: naming a lower group only, which then gets a higher group of its
own, with and without node cpu/memory) are then answered three ways, which must agree:

- the brute force below, which enumerates every assignment of request groups
  to node groups (same level, distinct groups, subgroups on direct children
  of their parent's group, skipped levels filled in per request group, room)
  and scores each with the documented pack/spread formula, in fractions;
- POST /group_resources/candidates, with and without ``limit``: exactly the
  nodes with an assignment (the best ``limit`` of them, by exact score at nine
  decimals, then name), each answered with a valid one of exactly maximal
  score;
- each node's dry-run query (POST /group_resources/queries) run through GET
  /allocation_candidates: exactly the brute-force assignments, once each.

A world of 36 nodes checks ``limit`` past the first batch of the bounded
search, worlds of devices of about 2**31 units requests whose placements
differ by less than float rounding, and minimal cases keep the bugs it once
found fixed: groups of later batches numbered apart from the first, a
zero-capacity inventory lowering a bound, and float sums that tied or ranked
the wrong way round.

The oracle knows the worlds from the key maps it writes and the allocations
it reads back through the generic API; it imports nothing of the translator.
"""

import random
import re
import uuid
from dataclasses import dataclass, field
from fractions import Fraction

import pytest

from tests.api.group_resource_helpers import candidates, claim, sync

WORLDS = 20
REQUESTS_PER_WORLD = 5
SCORERS = ("pack", "spread")
TOLERANCE = 1e-6
MAX_ENGINE_CANDIDATES = 10000  # placement's default max_allocation_candidates

ROOT_CLASSES = {"cpu": "VCPU", "memory": "MEMORY_MB"}
BYTE_NAMES = {"memory"}  # base names counted in MB


# The model of a world -------------------------------------------------------


def resource_class(level: str | None, base_name: str) -> str:
    """The class the documented naming gives a base resource of a level."""
    if level is None:
        return ROOT_CLASSES[base_name]
    name = f"CUSTOM_{level.upper()}_{base_name.upper()}"
    return f"{name}_MB" if base_name in BYTE_NAMES else name


def amount_of(value) -> int:
    """Class units of an amount this file writes: an int, ``NGiB`` or ``NMi`` (MB)."""
    if isinstance(value, int):
        return value
    if value.endswith("GiB"):
        return int(value[:-3]) * 1024
    assert value.endswith("Mi"), value
    return int(value[:-2])


@dataclass
class Inventory:
    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = 0  # 0: total
    step_size: int = 1
    allocation_ratio: float = 1.0
    used: int = 0

    def __post_init__(self) -> None:
        self.max_unit = self.max_unit or self.total

    @property
    def capacity(self) -> float:
        return (self.total - self.reserved) * self.allocation_ratio

    def fits(self, amount: int) -> bool:
        return (
            self.min_unit <= amount <= self.max_unit
            and amount % self.step_size == 0
            and self.used + amount <= self.capacity
        )

    def body(self) -> dict:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": self.allocation_ratio,
        }


@dataclass(eq=False)
class NodeGroup:
    """A group of a node (or the node itself, path ())."""

    path: tuple[str, ...]
    level: str | None
    inventories: dict[str, Inventory] = field(default_factory=dict)
    children: list["NodeGroup"] = field(default_factory=list)
    uuid: str = ""

    def takes(self, want: "Want") -> bool:
        for base_name, (_key, amount) in want.demands.items():
            inventory = self.inventories.get(resource_class(self.level, base_name))
            if inventory is None or not inventory.fits(amount):
                return False
        return True


@dataclass
class NodeModel:
    name: str
    resources: dict
    groups: dict[tuple[str, ...], NodeGroup]  # path -> group; () is the node
    parents: dict[str, str | None]  # level -> the level it sits under

    @property
    def root(self) -> NodeGroup:
        return self.groups[()]

    def of_level(self, level: str) -> list[NodeGroup]:
        return [g for g in self.groups.values() if g.level == level]

    def ancestors(self, level: str) -> list[str]:
        chain = []
        parent = self.parents[level]
        while parent is not None:
            chain.append(parent)
            parent = self.parents[parent]
        return chain[::-1]

    def inventories(self) -> list[Inventory]:
        return [i for g in self.groups.values() for i in g.inventories.values()]


def node_model(name: str, resources: dict) -> NodeModel:
    groups = {(): NodeGroup(path=(), level=None)}
    parents: dict[str, str | None] = {}
    for key, value in resources.items():
        segments = key.split("/")
        path = tuple(segments[:-1])
        for depth in range(2, len(path) + 1, 2):
            prefix = path[:depth]
            if prefix not in groups:
                groups[prefix] = NodeGroup(path=prefix, level=prefix[-2])
                groups[prefix[:-2]].children.append(groups[prefix])
                parents[prefix[-2]] = prefix[-4] if depth > 2 else None
        amount = amount_of(value)
        if amount > 0:
            level = path[-2] if path else None
            groups[path].inventories[resource_class(level, segments[-1])] = Inventory(amount)
    return NodeModel(name=name, resources=resources, groups=groups, parents=parents)


@dataclass(eq=False)
class Want:
    """A request group: its level, its path (as the translator names it), its demands."""

    level: str | None
    path: tuple[str, ...]
    demands: dict[str, tuple[str, int]] = field(default_factory=dict)  # base -> (key, amount)
    children: list["Want"] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "/".join(self.path)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()


def parse_request(resources: dict) -> tuple[Want, bool]:
    """The request tree, and whether the request is flat (no group holds subgroups)."""
    wants = {(): Want(level=None, path=())}
    for key, value in resources.items():
        segments = key.split("/")
        path = tuple(segments[:-1])
        for depth in range(2, len(path) + 1, 2):
            prefix = path[:depth]
            if prefix not in wants:
                wants[prefix] = Want(level=prefix[-2], path=prefix)
                wants[prefix[:-2]].children.append(wants[prefix])
        wants[path].demands[segments[-1]] = (key, amount_of(value))
    top = wants[()]
    return top, all(not child.children for child in top.children)


@dataclass(frozen=True)
class Reading:
    """The ``options`` of a request, as the oracle reads them (the defaults: none)."""

    fill_levels: bool = False  # flat_requests: fill_levels
    summed: bool = False  # node_ranking: sum
    shared: bool = False  # sibling_groups: shared

    @classmethod
    def of(cls, options: dict | None) -> "Reading":
        options = options or {}
        return cls(
            fill_levels=options.get("flat_requests") == "fill_levels",
            summed=options.get("node_ranking") == "sum",
            shared=options.get("sibling_groups") == "shared",
        )


def fit_to_node(top: Want, anywhere: bool, node: NodeModel) -> Want | None:
    """The request as it must land on ``node``; None when the node lacks its levels.

    Anywhere (a flat request, unless its levels are filled in): every group goes
    anywhere on its level. Otherwise every level the request skips between a
    group and its subgroup is filled in per subgroup, named after the
    subgroup's index (``Gpugrp0/RA`` -> ``Gpugrp1/RA`` above it).
    """
    if anywhere:
        return top if all(c.level in node.parents for c in top.children) else None
    return _fit(top, node)


def _fit(want: Want, node: NodeModel) -> Want | None:
    children = []
    for child in want.children:
        if child.level not in node.parents:
            return None
        above = node.ancestors(child.level)
        if want.level is None:
            between = above
        elif want.level in above:
            between = above[above.index(want.level) + 1 :]
        else:
            return None
        fitted = _fit(child, node)
        if fitted is None:
            return None
        index = child.path[-1]
        for depth in reversed(range(len(between))):
            filled = tuple(s for level in between[: depth + 1] for s in (level, index))
            fitted = Want(level=between[depth], path=want.path + filled, children=[fitted])
        children.append(fitted)
    return Want(level=want.level, path=want.path, demands=want.demands, children=children)


def brute_force(
    node: NodeModel, top: Want, anywhere: bool, shared: bool = False
) -> list[dict[Want, NodeGroup]]:
    """Every valid assignment of the (fitted) request groups to groups of ``node``.

    Distinct groups for distinct request groups, each holding its own amounts;
    or (``shared``) any groups that hold each request group on it alone and what
    all of them ask of each class together, in one allocation (the units of the sum).
    """
    if not node.root.takes(top):
        return []
    order = _preorder(top)  # parents before children
    found: list[dict[Want, NodeGroup]] = []
    chosen: dict[Want, NodeGroup] = {top: node.root}
    taken: set[int] = set()
    load: dict[tuple[int, str], int] = {}  # (group, class) -> the summed amount on it

    def holds_sums() -> bool:
        return all(
            by_id[group_id].inventories[cls].fits(amount)
            for (group_id, cls), amount in load.items()
            if amount
        )

    def add(want: Want, group: NodeGroup, sign: int) -> bool:
        """Add (sign 1) or take back (-1) ``want``'s amounts; whether they may still fit."""
        room = True
        for base_name, (_key, amount) in want.demands.items():
            cls = resource_class(group.level, base_name)
            inventory = group.inventories[cls]
            load[(id(group), cls)] = load.get((id(group), cls), 0) + sign * amount
            total = load[(id(group), cls)]
            room = (
                room
                and total <= inventory.max_unit
                and inventory.used + total <= (inventory.capacity)
            )
        return room

    by_id = {id(group): group for group in node.groups.values()}

    def place(position: int) -> None:
        if position == len(order):
            if not shared or holds_sums():
                found.append({want: chosen[want] for want, _ in order})
            return
        want, parent = order[position]
        options = node.of_level(want.level) if anywhere else chosen[parent].children
        for group in options:
            if group.level != want.level:
                continue
            if shared:
                if not group.takes(want):
                    continue
                if add(want, group, 1):
                    chosen[want] = group
                    place(position + 1)
                    del chosen[want]
                add(want, group, -1)
                continue
            if id(group) in taken or not group.takes(want):
                continue
            chosen[want] = group
            taken.add(id(group))
            place(position + 1)
            taken.discard(id(group))
            del chosen[want]

    place(0)
    return found


def _preorder(top: Want) -> list[tuple[Want, Want]]:
    pairs = []

    def visit(parent: Want) -> None:
        for child in parent.children:
            pairs.append((child, parent))
            visit(child)

    visit(top)
    return pairs


def pack(
    node: NodeModel, top: Want, assignment: dict[Want, NodeGroup], summed: bool = False
) -> Fraction:
    """Mean (or ``summed``, the sum) over every inventory of the node of (used + placed) /
    capacity, exactly (the capacity being the float product placement computes)."""
    inventories = node.inventories()
    assert all(i.capacity > 0 for i in inventories)
    filled = sum((Fraction(i.used) / Fraction(i.capacity) for i in inventories), Fraction(0))
    for want, group in [(top, node.root), *assignment.items()]:
        for base_name, (_key, amount) in want.demands.items():
            capacity = group.inventories[resource_class(group.level, base_name)].capacity
            filled += amount / Fraction(capacity)
    return filled if summed else filled / len(inventories)


def score(scorer: str, node: NodeModel, top: Want, assignment, summed: bool = False) -> Fraction:
    """pack, or spread: 1 - pack (summed: the number of inventories - pack)."""
    packed = pack(node, top, assignment, summed)
    return packed if scorer == "pack" else (len(node.inventories()) if summed else 1) - packed


def signature(assignment: dict[Want, NodeGroup]) -> frozenset:
    """An assignment as (request group label, node group path) pairs."""
    return frozenset((label_key(want.label), group.path) for want, group in assignment.items())


def label_key(label: str) -> str:
    """A request group's path with its level names compared as placement names them.

    Levels are one level whatever their case (``Gpugrp1`` is ``GPUGRP1``), and a
    filled-in level may be labelled either way.
    """
    segments = label.split("/")
    return "/".join(
        re.sub(r"[^A-Z0-9]", "_", s.upper()) if i % 2 == 0 else s for i, s in enumerate(segments)
    )


def expected_allocations(node: NodeModel, top: Want, assignment) -> dict[str, dict[str, int]]:
    allocations: dict[str, dict[str, int]] = {}
    for want, group in [(top, node.root), *assignment.items()]:
        for base_name, (_key, amount) in want.demands.items():
            taken = allocations.setdefault(group.uuid, {})
            cls = resource_class(group.level, base_name)
            taken[cls] = taken.get(cls, 0) + amount
    return {u: a for u, a in allocations.items() if a}


# Random worlds --------------------------------------------------------------


def memory_value(rng: random.Random, low_gib: int, high_gib: int) -> str:
    if rng.random() < 0.15:
        return f"{rng.randint(low_gib * 2, high_gib * 2) * 512}Mi"
    return f"{rng.randint(low_gib, high_gib)}GiB"


def chunks(rng: random.Random, items: list, largest: int) -> list[list]:
    out, start = [], 0
    while start < len(items):
        size = rng.randint(1, largest)
        out.append(items[start : start + size])
        start += size
    return out


def random_node_resources(rng: random.Random) -> dict:
    shape = rng.choice(["flat", "two", "three", "three"])  # three levels take any request
    gpus = list(range(rng.randint(2, 6)))
    resources: dict = {"cpu": rng.randint(2, 8), "memory": memory_value(rng, 2, 8)}
    if shape == "flat":
        prefixes = {gpu: "" for gpu in gpus}
    else:
        group0s = chunks(rng, gpus, 3)
        group1s = chunks(rng, list(range(len(group0s))), 2) if shape == "three" else None
        prefixes = {}
        with_bandwidth = rng.random() < 0.3
        for index0, members in enumerate(group0s):
            prefix0 = f"Gpugrp0/{index0}/"
            if group1s is not None:
                index1 = next(i for i, g in enumerate(group1s) if index0 in g)
                prefix0 = f"Gpugrp1/{index1}/{prefix0}"
            if with_bandwidth and rng.random() < 0.7:
                resources[f"{prefix0}bw"] = rng.randint(1, 2)
            for gpu in members:
                prefixes[gpu] = prefix0
    for gpu in gpus:
        device = f"{prefixes[gpu]}gpu/dev{gpu}"
        resources[f"{device}/cards"] = rng.choice([1, 1, 1, 2])
        roll = rng.random()
        if roll < 0.05:
            resources[f"{device}/memory"] = 0  # the group exists, with no memory inventory
        elif roll < 0.85:
            resources[f"{device}/memory"] = memory_value(rng, 1, 4)
    return resources


def gpu_demand(rng: random.Random, prefix: str) -> dict:
    demand: dict = {f"{prefix}/cards": 2 if rng.random() < 0.08 else 1}
    if rng.random() < 0.6:
        demand[f"{prefix}/memory"] = memory_value(rng, 1, rng.choice([2, 4]))
    return demand


def random_request(rng: random.Random) -> dict:
    kind = rng.choice(["flat", "flat", "two", "three", "skip", "mixed", "base"])
    request: dict = {}
    if kind == "flat":
        for i in range(rng.randint(1, 3)):
            request.update(gpu_demand(rng, f"gpu/{i}"))
        if rng.random() < 0.2:
            request["Gpugrp0/Q0/bw"] = 1
    elif kind == "two":
        for a in range(rng.randint(1, 2)):
            for j in range(rng.randint(1, 2)):
                request.update(gpu_demand(rng, f"Gpugrp0/R{a}/gpu/g{a}{j}"))
            if rng.random() < 0.2:
                request[f"Gpugrp0/R{a}/bw"] = 1
    elif kind == "three":
        for s in range(rng.randint(1, 2)):
            for a in range(rng.randint(1, 2) if s == 0 else 1):
                for j in range(rng.randint(1, 2)):
                    request.update(gpu_demand(rng, f"Gpugrp1/S{s}/Gpugrp0/R{s}{a}/gpu/g{s}{a}{j}"))
    elif kind == "skip":  # Gpugrp0 left out under Gpugrp1: one filled in per GPU
        for s in range(rng.randint(1, 2)):
            for j in range(rng.randint(1, 2)):
                request.update(gpu_demand(rng, f"Gpugrp1/S{s}/gpu/g{s}{j}"))
    elif kind == "mixed":  # a top-level GPU beside a Gpugrp0 pair: hierarchical
        request.update(gpu_demand(rng, "gpu/x0"))
        for j in range(rng.randint(1, 2)):
            request.update(gpu_demand(rng, f"Gpugrp0/R0/gpu/g{j}"))
    if kind == "base" or rng.random() < 0.5:
        if kind == "base" or rng.random() < 0.7:
            request["cpu"] = rng.randint(1, 3)
        if rng.random() < 0.5:
            request["memory"] = memory_value(rng, 1, 3)
    return request


def tweak_inventory(rng: random.Random, inventory: Inventory, byte_amount: bool) -> None:
    total = inventory.total
    inventory.reserved = rng.choice([0, 0, total // 4, total // 2])
    inventory.allocation_ratio = rng.choice([1.0, 1.0, 1.5, 2.0])
    inventory.step_size = rng.choice([1, 512, 1024, 2048, 2048] if byte_amount else [1, 1, 2])
    inventory.min_unit = rng.choice([1, 1, inventory.step_size])
    inventory.max_unit = rng.choice([total, total, max(total // 2, 1)])
    inventory.min_unit = min(inventory.min_unit, inventory.max_unit)


@dataclass
class World:
    nodes: dict[str, NodeModel]
    by_uuid: dict[str, NodeGroup]  # provider uuid -> group
    node_of: dict[str, NodeModel]  # provider uuid -> node


def build_world(
    api, rng: random.Random, names: list[str], make_resources, change_capacity: bool = True
) -> World:
    """Nodes ``names`` synced from ``make_resources(rng)``, then (``change_capacity``) some
    capacity changed or taken."""
    world = World(nodes={}, by_uuid={}, node_of={})
    resources: dict = {}
    for name in names:
        if not resources or rng.random() > 0.3:  # else a twin of the previous node
            resources = make_resources(rng)
        model = node_model(name, resources)
        view = sync(api, model.name, model.resources).json
        model.root.uuid = view["uuid"]
        for group in view["groups"]:
            model.groups[tuple(group["key"].split("/"))].uuid = group["uuid"]
        assert len(view["groups"]) == len(model.groups) - 1
        for group in model.groups.values():
            world.by_uuid[group.uuid] = group
            world.node_of[group.uuid] = model
        world.nodes[name] = model
    if not change_capacity:
        return world
    if rng.random() < 0.6:
        _tweak_inventories(api, rng, world)
    if rng.random() < 0.4:
        _claim_some(api, rng, world)
    if rng.random() < 0.5:
        _allocate_some(api, rng, world)
    return world


def _tweak_inventories(api, rng: random.Random, world: World) -> None:
    held = [g for g in world.by_uuid.values() if g.inventories]
    for group in rng.sample(held, min(len(held), rng.randint(1, 4))):
        for cls, inventory in group.inventories.items():
            tweak_inventory(rng, inventory, byte_amount=cls.endswith("_MB"))
        api.set_inventory(group.uuid, **{c: i.body() for c, i in group.inventories.items()})


def _claim_some(api, rng: random.Random, world: World) -> None:
    for _ in range(rng.randint(1, 2)):
        consumer = str(uuid.uuid4())
        # One node per claim: a claim picks at random between equal nodes, and a seed
        # should rebuild the same world.
        node = rng.choice(sorted(world.nodes))
        response = claim(
            api, random_request(rng), consumer, scorer=rng.choice(SCORERS), nodes=[node]
        )
        assert response.status_code in (200, 409), response.json
        if response.status_code == 200:
            # What was taken, as the generic API reports it.
            stored = api.get(f"/allocations/{consumer}").json["allocations"]
            for provider, entry in stored.items():
                for cls, amount in entry["resources"].items():
                    world.by_uuid[provider].inventories[cls].used += amount


def _allocate_some(api, rng: random.Random, world: World) -> None:
    held = [(g, c, i) for g in world.by_uuid.values() for c, i in g.inventories.items()]
    for group, cls, inventory in rng.sample(held, min(len(held), rng.randint(1, 3))):
        amounts = [a for a in range(1, inventory.max_unit + 1) if inventory.fits(a)]
        if not amounts:
            continue
        amount = rng.choice(amounts)
        response = api.allocate(uuid.uuid4(), {group.uuid: {cls: amount}}, project="p1", user="u1")
        assert response.status_code == 204, response.json
        inventory.used += amount


# The comparison -------------------------------------------------------------


def assignment_of_answer(top: Want, anywhere: bool, mappings: dict, node: NodeModel):
    """The node group of every fitted request group, read from the answer's mappings."""
    assignment: dict[Want, NodeGroup] = {}
    for key, _amount in top.demands.values():
        assert mappings[key] == key, (key, mappings[key])
    for want, _parent in _preorder(top):
        depth = len(_ancestry(top, want))
        paths = set()
        for below in want.walk():
            for base_name, (key, _amount) in below.demands.items():
                node_key = mappings[key].split("/")
                assert node_key[-1] == base_name, (key, mappings[key])
                group_path = tuple(node_key[:-1])
                if below is want and not anywhere:
                    assert len(group_path) == 2 * depth, (key, mappings[key])
                paths.add(group_path if anywhere else group_path[: 2 * depth])
        assert len(paths) == 1, f"{want.label} mapped to several groups: {sorted(paths)}"
        [path] = paths
        assert path in node.groups, f"{want.label} mapped to {path}, not a group of the node"
        assignment[want] = node.groups[path]
    return assignment


def _ancestry(top: Want, want: Want) -> list[Want]:
    """The groups from ``top`` down to ``want``'s parent."""
    for child in top.children:
        if child is want:
            return [top]
        below = _ancestry(child, want)
        if below:
            return [top, *below]
    return []


@dataclass
class Expected:
    """The brute-force answer to one request on one world, for one scorer and reading."""

    scorer: str
    reading: Reading
    top: Want
    anywhere: bool  # a flat request whose groups go anywhere
    keys: set[str]  # every requested key
    fitted: dict[str, Want]  # node -> the request as it must land there (levels filled in)
    valid: dict[str, set]  # node -> signatures of every valid assignment (feasible nodes)
    best: dict[str, Fraction]  # node -> its best score (feasible nodes)

    def ranked(self) -> list[str]:
        """The feasible nodes, best first: by exact score at nine decimals, then name."""
        return sorted(self.best, key=lambda name: (-round(self.best[name] * 10**9), name))


def expected(world: World, request: dict, scorer: str, reading: Reading | None = None) -> Expected:
    reading = reading or Reading()
    top, flat = parse_request(request)
    anywhere = flat and not reading.fill_levels
    keys = {key for want in top.walk() for key, _amount in want.demands.values()}
    answer = Expected(scorer, reading, top, anywhere, keys, fitted={}, valid={}, best={})
    for name, node in world.nodes.items():
        fitted = fit_to_node(top, anywhere, node)
        if fitted is None:
            continue
        answer.fitted[name] = fitted
        found = brute_force(node, fitted, anywhere, reading.shared)
        if found:
            answer.valid[name] = {signature(a) for a in found}
            answer.best[name] = max(score(scorer, node, fitted, a, reading.summed) for a in found)
    return answer


def check_answer(world: World, oracle: Expected, body: dict, limit, context: str) -> None:
    """``body`` (a /candidates answer) gives the best nodes, each at its best, best first."""
    listed = body["candidates"]
    names = [c["node"] for c in listed]
    assert len(names) == len(set(names)), context
    ranked = oracle.ranked()[:limit]
    assert names == ranked, (context, names, ranked)
    best_scores = [float(oracle.best[name]) for name in ranked]
    if limit is None:
        assert set(names) == set(oracle.best), (context, names, oracle.best)
        assert body["feasible_nodes"] == len(oracle.best), context
    else:  # a limited search may stop early and not count the nodes it skipped
        assert body.get("feasible_nodes", len(oracle.best)) == len(oracle.best), context
    scores = [c["score"] for c in listed]
    assert scores == sorted(scores, reverse=True), (context, scores)
    assert scores == pytest.approx(best_scores, abs=TOLERANCE), (
        f"{context}: scores {scores}, best nodes score {best_scores}"
    )
    for candidate in listed:
        node = world.nodes[candidate["node"]]
        assert node.name in oracle.best, f"{context}: {node.name} cannot take the request"
        fitted = oracle.fitted[node.name]
        assert candidate["node_uuid"] == node.root.uuid, context
        assert set(candidate["mappings"]) == oracle.keys, context
        assignment = assignment_of_answer(fitted, oracle.anywhere, candidate["mappings"], node)
        assert signature(assignment) in oracle.valid[node.name], (
            f"{context}: invalid placement on {node.name}: {candidate['mappings']}"
        )
        achieved = score(oracle.scorer, node, fitted, assignment, oracle.reading.summed)
        assert achieved == oracle.best[node.name], (
            f"{context}: {node.name} answered a placement scoring {achieved}, its best "
            f"scores {oracle.best[node.name]}: {candidate['mappings']}"
        )
        assert candidate["score"] == pytest.approx(float(achieved), abs=TOLERANCE), context
        assert {u: e["resources"] for u, e in candidate["allocations"].items()} == (
            expected_allocations(node, fitted, assignment)
        ), context


def check_candidates(
    api, world: World, request: dict, scorer: str, context: str, options: dict | None = None
) -> None:
    oracle = expected(world, request, scorer, Reading.of(options))
    chosen = {"options": options} if options else {}
    whole = candidates(api, request, scorer=scorer, **chosen)
    check_answer(world, oracle, whole, None, context)
    limit = max(1, len(whole["candidates"]) - 1)
    limited = candidates(api, request, scorer=scorer, limit=limit, **chosen)
    check_answer(world, oracle, limited, limit, f"{context} (limit {limit})")
    # Ties are broken by name in both, so the limited answer is the whole one cut.
    assert [c["node"] for c in limited["candidates"]] == (
        [c["node"] for c in whole["candidates"]][:limit]
    ), context


def check_claim(api, world: World, request: dict, scorer: str, context: str, options: dict):
    """A claim takes the best candidate (the first choice of a claim no other races); its
    allocations are then given back, leaving the world as it was."""
    oracle = expected(world, request, scorer, Reading.of(options))
    consumer = str(uuid.uuid4())
    response = claim(api, request, consumer, scorer=scorer, options=options)
    if not oracle.best:
        assert response.status_code == 409, (context, response.json)
        return
    assert response.status_code == 200, (context, response.json)
    check_answer(world, oracle, {"candidates": [response.json]}, 1, f"{context} (claim)")
    assert api.delete(f"/allocations/{consumer}").status_code == 204, context


def check_engine(
    api, world: World, request: dict, context: str, options: dict | None = None
) -> None:
    """Each node's dry-run query lists, through the generic search, the brute-force set.

    The engine lists one candidate per assignment of request groups (filled-in
    ones included) to providers, ``group_policy=isolate`` keeping them
    distinct (or ``none`` with shared groups, the engine checking summed
    amounts). A filled-in group is fixed by the subgroup it holds, so those are
    exactly the brute-force assignments: the same set, none listed twice.
    """
    reading = Reading.of(options)
    chosen = {"options": options} if options else {}
    top, flat = parse_request(request)
    anywhere = flat and not reading.fill_levels
    for name, node in world.nodes.items():
        fitted = fit_to_node(top, anywhere, node)
        response = api.post(
            "/group_resources/queries", json={"resources": request, "nodes": [name], **chosen}
        )
        assert response.status_code == 200, (context, response.json)
        [translation] = response.json["queries"]
        assert translation["nodes"] == [name], context
        if fitted is None:
            assert "unplaced" in translation, (context, name, translation)
            continue
        assert "query" in translation, (context, name, translation)
        wanted = {signature(a) for a in brute_force(node, fitted, anywhere, reading.shared)}
        assert len(wanted) < MAX_ENGINE_CANDIDATES, context
        labels = sorted(label_key(want.label) for want in fitted.walk() if want is not fitted)
        groups = {s: label_key(label) for s, label in translation["groups"].items()}
        assert sorted(groups.values()) == labels, (context, translation)
        listed = api.get(
            f"/allocation_candidates?{translation['query']}",
            version=translation["microversion"],
        )
        if listed.status_code == 400 and "No such resource class" in str(listed.json):
            # A class no provider has ever had (CUSTOM_GPUGRP0_BW in a world
            # without bw): the generic API refuses the query rather than
            # answering none, as OpenStack Placement does. Nothing can fit.
            assert not wanted, (context, name, listed.json)
            continue
        assert listed.status_code == 200, (context, listed.json)
        found = []
        for candidate in listed.json["allocation_requests"]:
            pairs = set()
            for suffix, providers in candidate["mappings"].items():
                if suffix == "":
                    continue
                [provider] = providers
                assert world.node_of[provider] is node, (context, name, candidate)
                pairs.add((groups[suffix], world.by_uuid[provider].path))
            found.append(frozenset(pairs))
        assert len(found) == len(set(found)), f"{context}: {name}: a candidate listed twice"
        assert set(found) == wanted, (
            f"{context}: {name}: engine lists {len(found)}, brute force {len(wanted)}; "
            f"only engine: {sorted(map(sorted, set(found) - wanted))[:3]}; "
            f"only brute force: {sorted(map(sorted, wanted - set(found)))[:3]}"
        )


@pytest.mark.parametrize("seed", range(WORLDS))
def test_translator_agrees_with_brute_force(api, seed):
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(1, 3))]
    world = build_world(api, rng, names, random_node_resources)
    for number in range(REQUESTS_PER_WORLD):
        request = random_request(rng)
        context = f"seed {seed}, request {number}: {request}"
        for scorer in SCORERS:
            check_candidates(api, world, request, scorer, f"{context} ({scorer})")
        check_engine(api, world, request, context)


# The group allocator's own readings, chosen per request (``options``), each alone
# and all together: candidates, claims and the dry run against the brute force.

READINGS = {
    "fill_levels": {"flat_requests": "fill_levels"},
    "sum": {"node_ranking": "sum"},
    "shared": {"sibling_groups": "shared"},
    "all": {"flat_requests": "fill_levels", "node_ranking": "sum", "sibling_groups": "shared"},
}
READING_WORLDS = 12


@pytest.mark.parametrize("seed", range(READING_WORLDS))
@pytest.mark.parametrize("reading", sorted(READINGS))
def test_each_reading_agrees_with_brute_force(api, reading, seed):
    rng = random.Random(3000 + seed)
    world = build_world(
        api, rng, [f"r{i}" for i in range(rng.randint(1, 3))], random_node_resources
    )
    for number in range(REQUESTS_PER_WORLD):
        request = random_request(rng)
        check_reading(
            api,
            world,
            request,
            READINGS[reading],
            rng.choice(SCORERS),
            f"{reading} seed {seed}, request {number}: {request}",
        )


def check_reading(
    api, world: World, request: dict, options: dict, claim_scorer: str, context: str
) -> None:
    """Candidates with both scorers, a claim and the dry run of a request read by ``options``."""
    for scorer in SCORERS:
        check_candidates(api, world, request, scorer, f"{context} ({scorer})", options)
    check_claim(api, world, request, claim_scorer, context, options)
    check_engine(api, world, request, context, options)


def random_multi_card_node_resources(rng: random.Random) -> dict:
    """A random node whose devices have 2 to 4 cards: room for requested GPUs to share."""
    resources = random_node_resources(rng)
    for key in resources:
        if key.endswith("/cards"):
            resources[key] = rng.randint(2, 4)
    return resources


@pytest.mark.parametrize("seed", range(8))
def test_shared_groups_on_multi_card_devices_agree_with_brute_force(api, seed):
    rng = random.Random(4000 + seed)
    world = build_world(
        api, rng, [f"m{i}" for i in range(rng.randint(1, 2))], random_multi_card_node_resources
    )
    _tweak_inventories(api, rng, world)  # units and ratios: what sums and groups alone meet
    for number in range(REQUESTS_PER_WORLD):
        request = random_request(rng)
        check_reading(
            api,
            world,
            request,
            READINGS["shared"],
            rng.choice(SCORERS),
            f"multi-card seed {seed}, request {number}: {request}",
        )


# Many nodes: /candidates with a limit reads them in batches (32 first), best bound first.

WIDE_NODES = 36


@pytest.mark.parametrize("seed", [0])
def test_limited_answers_on_many_nodes_agree_with_brute_force(api, seed):
    rng = random.Random(1000 + seed)
    names = [f"w{i:02d}" for i in range(WIDE_NODES)]
    world = build_world(api, rng, names, random_node_resources)
    for number in range(REQUESTS_PER_WORLD):
        request = random_request(rng)
        for scorer in SCORERS:
            oracle = expected(world, request, scorer)
            for limit in (None, 1, 3, WIDE_NODES):
                context = f"wide seed {seed}, request {number}: {request} ({scorer}, {limit})"
                options = {} if limit is None else {"limit": limit}
                body = candidates(api, request, scorer=scorer, **options)
                check_answer(world, oracle, body, limit, context)


# Devices of about 2**31 units: placements whose scores differ by less than float
# rounding (about 2**-52 of the score), which only exact comparisons tell apart.

BIG = 2**31 - 1


def random_big_node_resources(rng: random.Random) -> dict:
    devices = rng.randint(2, 4)
    pairs = rng.random() < 0.5
    resources: dict = {}
    for device in range(devices):
        prefix = f"Gpugrp0/{device // 2}/" if pairs else ""
        resources[f"{prefix}gpu/dev{device}/units"] = BIG - rng.randint(0, 3)
    return resources


def random_big_request(rng: random.Random) -> dict:
    return {f"gpu/{i}/units": 2**30 + rng.randint(-2, 2) for i in range(rng.randint(1, 3))}


@pytest.mark.parametrize("seed", range(4))
def test_scores_closer_than_float_rounding_agree_with_brute_force(api, seed):
    rng = random.Random(2000 + seed)
    names = [f"b{i}" for i in range(rng.randint(1, 3))]
    world = build_world(api, rng, names, random_big_node_resources, change_capacity=False)
    for number in range(REQUESTS_PER_WORLD):
        request = random_big_request(rng)
        for scorer in SCORERS:
            check_candidates(
                api,
                world,
                request,
                scorer,
                f"big seed {seed}, request {number}: {request} ({scorer})",
            )


def test_a_placement_better_by_less_than_float_rounding_wins(api):
    # Floats give a->d1, b->d2 and a->d2, b->d1 one sum; exactly, the second is larger
    # by 1 / (d1 * d2). Before scores were exact the first was answered.
    sync(api, "n", {"gpu/d1/units": 2147483646, "gpu/d2/units": 2147483647})
    request = {"gpu/a/units": 1073741824, "gpu/b/units": 1073741825}
    for options in ({}, {"limit": 1}):
        [best] = candidates(api, request, **options)["candidates"]
        assert best["mappings"] == {"gpu/a/units": "gpu/d2/units", "gpu/b/units": "gpu/d1/units"}
    consumer = str(uuid.uuid4())
    assert claim(api, request, consumer).json["mappings"] == best["mappings"]


def test_nodes_rank_by_their_exact_score_at_nine_decimals(api):
    # a scores (1720635158 + 1) / (2**31 - 1) = 0.80123318349..., b 0.801233184. In
    # floats a's score rounded up to b's at nine decimals, and the tie went to a by name.
    for name, total, used in (("a", BIG, 1720635158), ("b", 10**9, 801233183)):
        sync(api, name, {"gpu/d/units": total})
        [device] = api.get(f"/group_resources/nodes/{name}").json["groups"]
        allocated = api.allocate(uuid.uuid4(), {device["uuid"]: {"CUSTOM_GPU_UNITS": used}})
        assert allocated.status_code == 204, allocated.json
    for options in ({}, {"limit": 1}):
        listed = candidates(api, {"gpu/0/units": 1}, **options)["candidates"]
        assert [c["node"] for c in listed][:1] == ["b"], options


def one_gpu_node(gpu_memory: str) -> dict:
    return {"cpu": 4, "memory": "4GiB", "gpu/dev0/cards": 1, "gpu/dev0/memory": gpu_memory}


ONE_SMALL_GPU = {"gpu/0/cards": 1, "gpu/0/memory": "1GiB"}


def test_limit_places_a_node_of_the_second_batch_at_its_best(api):
    for i in range(32):  # pack bound (1/1 + 1024/1024) / 4 = 0.5: the first batch
        sync(api, f"a{i:02d}", one_gpu_node("4GiB"))
    # Bound 2/6, so read in the second batch. Its best: dev0, (1/1 + 1024/1024) / 6.
    two_gpus = {**one_gpu_node("1GiB"), "gpu/dev1/cards": 1, "gpu/dev1/memory": "2GiB"}
    sync(api, "b", two_gpus)
    for options in ({}, {"limit": 33}):
        answer = candidates(api, ONE_SMALL_GPU, **options)
        [b] = [c for c in answer["candidates"] if c["node"] == "b"]
        assert (b["mappings"]["gpu/0/cards"], b["score"]) == ("gpu/dev0/cards", 0.333333), options


def test_limit_finds_the_best_node_when_some_inventory_has_no_capacity(api):
    for i in range(32):  # each scores (1/1 + 1024/4096) / 4 = 0.3125
        sync(api, f"a{i:02d}", one_gpu_node("4GiB"))
    sync(api, "b", one_gpu_node("1GiB"))  # scores (1/1 + 1024/1024) / 4 = 0.5
    [device] = api.get("/group_resources/nodes/a00").json["groups"]
    api.set_inventory(  # a00's GPU memory taken out of service
        device["uuid"],
        CUSTOM_GPU_CARDS=1,
        CUSTOM_GPU_MEMORY_MB={"total": 4096, "reserved": 4096},
    )
    for options in ({}, {"limit": 1}):
        best = candidates(api, ONE_SMALL_GPU, **options)["candidates"][0]
        assert (best["node"], best["score"]) == ("b", 0.5), options


# Ties between placements of equal score break one way, whatever a worker met before: a
# claim no other races takes the first candidate, on any worker.


def test_a_tie_breaks_alike_on_a_worker_that_met_other_groups_first(api):
    """dev0 and dev1 tie for one card (memory is not asked): the tie goes to the group
    earlier in content order (less memory: dev0) on every worker. Before, the order was
    the one in which a worker had numbered the groups' contents: a worker that had built
    a node with a GPU like dev1 first put dev1 first."""
    sync(api, "m", {"gpu/devA/cards": 1, "gpu/devA/memory": "4GiB"})
    sync(
        api,
        "n",
        {
            "gpu/dev0/cards": 1,
            "gpu/dev0/memory": "2GiB",
            "gpu/dev1/cards": 1,
            "gpu/dev1/memory": "4GiB",
        },
    )
    request = {"gpu/0/cards": 1}
    [first] = candidates(api, request, nodes=["n"])["candidates"]
    assert first["mappings"] == {"gpu/0/cards": "gpu/dev0/cards"}
    with api.as_a_new_worker():
        assert candidates(api, request, nodes=["m"])["candidates"]  # m's GPU numbered first
        assert candidates(api, request, nodes=["n"])["candidates"] == [first]
        response = claim(api, request, str(uuid.uuid4()), nodes=["n"])
    assert response.status_code == 200, response.json
    assert response.json["mappings"] == first["mappings"]


TIE_WORLDS = 20


@pytest.mark.parametrize("seed", range(TIE_WORLDS))
def test_a_claim_takes_the_first_candidate_on_any_worker(api, seed):
    """Random worlds and requests (every reading): the candidates answered by one worker,
    then the claim by another that met the nodes one by one in reverse name order, and by
    the first worker; both claims take the first candidate (node and mappings)."""
    rng = random.Random(5000 + seed)
    world = build_world(
        api, rng, [f"t{i}" for i in range(rng.randint(1, 3))], random_node_resources
    )
    claimed = 0
    for number in range(40):
        if claimed == 5:
            break
        request = random_request(rng)
        scorer = rng.choice(SCORERS)
        options = rng.choice([{}, *READINGS.values()])
        context = f"tie seed {seed}, request {number}: {request} ({scorer}, {options})"
        answer = candidates(api, request, scorer=scorer, options=options)["candidates"]
        if not answer:
            continue
        first = (answer[0]["node"], answer[0]["mappings"])
        with api.as_a_new_worker():
            for name in sorted(world.nodes, reverse=True):
                candidates(api, request, scorer=scorer, options=options, nodes=[name])
            other = _claim_and_give_back(api, request, scorer, options)
        assert other == first, f"{context}: another worker's claim"
        assert _claim_and_give_back(api, request, scorer, options) == first, context
        claimed += 1
    assert claimed, f"tie seed {seed}: no request placed"


def _claim_and_give_back(api, request: dict, scorer: str, options: dict) -> tuple:
    consumer = str(uuid.uuid4())
    response = claim(api, request, consumer, scorer=scorer, options=options)
    assert response.status_code == 200, response.json
    assert api.delete(f"/allocations/{consumer}").status_code == 204
    return response.json["node"], response.json["mappings"]
