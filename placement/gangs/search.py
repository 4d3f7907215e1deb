"""The best gang in each domain of the required level, best gangs first.

A gang is M members, every one inside one domain of the ``required`` level: M copies
of one device request, or members of several kinds (k_i members of kind i, each kind a
device request). Gangs are ordered by, in turn:

1. with a ``preferred`` level, the number of domains the gang uses at that level, then
   at each narrower level, then the number of nodes (the node is the narrowest domain);
2. the members' own ranks summed over the members, as single nodes are ranked
   (``devices.search``): the joint scope (SamePCIe 0, SameNUMA 1, Node 2), then the
   link strength (more is better), then the scorer's score (in units of 10**-9);
3. the required domain's name.

The bound. The search never looks at combinations of nodes. The order above is a sum
over the members and domains used, compared lexicographically: it is kept as one
integer (``Fields``: each part in a field of 64 bits, most important first), so that
the rank of a gang is the sum of its parts' ranks. The network is a tree, and the best
way to place a vector of counts (c_1 .. c_K members of each kind) in a domain is made
of its children's best ways for their shares (a child's share placed otherwise could
be replaced by the child's best for the same share without making the sum worse). So
each domain keeps its best rank for every vector of counts with c_i <= k_i
(``Part.best``, keyed by ``request.Counts``' codes): at most V = (k_1 + 1) x ... x
(k_K + 1) of them, made from its children's by a min-plus combination of at most V x
(the child's vectors) sums per child. One kind is V = M + 1: O(N x M^2) for N nodes in
all. In general the work is at most O(N x V^2), and without sharing a node offers K + 1
vectors (none, or one member of a kind), so the nodes' combinations cost O(N x V x
(K + 1)). Against it stand the C(N, M) sets of nodes (times the ways to deal the kinds
among them). V is bounded by ``request.MAX_COUNT_VECTORS`` (1025, what one kind of
1024 members keeps); a request above it is refused with 400. Children of one member
each of the one kind (nodes without sharing) combine by sorting: the best m of them are
the m best ranked. Nodes alike choose once (``slots``). One gang per required domain is
answered, its best: other gangs of one domain would share most of its nodes, and the
answers are there to offer different places.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from placement.devices.snapshot import DeviceNode
from placement.gangs.network import Network
from placement.gangs.request import Counts
from placement.gangs.slots import SCORE_UNITS, MemberChoice, NodeSlots

FIELD_BITS = 64
STRENGTH_ROOM = 2**40  # a member's link strength is below it: kept as ROOM - strength


@dataclass(frozen=True)
class Fields:
    """How a gang's rank is one integer: the domain counts of ``counted`` positions (and
    the nodes when ``count_nodes``), then the members' scopes, strengths, scores."""

    counted: tuple[int, ...]  # level positions, preferred first
    count_nodes: bool

    def unit(self, index: int) -> int:
        size = len(self.counted) + int(self.count_nodes) + 3
        return 1 << (FIELD_BITS * (size - 1 - index))

    def domain_unit(self, position: int) -> int:
        return self.unit(self.counted.index(position)) if position in self.counted else 0

    def node_unit(self) -> int:
        return self.unit(len(self.counted)) if self.count_nodes else 0

    def member(self, choice: MemberChoice) -> int:
        first = len(self.counted) + int(self.count_nodes)
        strength = STRENGTH_ROOM - min(choice.strength, STRENGTH_ROOM - 1)
        score = SCORE_UNITS - max(0, min(choice.score_units, SCORE_UNITS))
        return (
            choice.scope_rank * self.unit(first)
            + strength * self.unit(first + 1)
            + score * self.unit(first + 2)
        )


@dataclass
class Part:
    """A domain or a node: its best rank for each vector of counts it can hold."""

    best: dict[int, int]  # counts code -> the best rank of those members in it
    holds: int  # the most members it holds, of every kind
    children: list["Part"] = field(default_factory=list)
    # per child: its share, per code (a list where the codes are 0 .. n)
    splits: Sequence[Mapping[int, int] | list[int]] = field(default_factory=list)
    slots: NodeSlots | None = None

    def shares(self, code: int) -> Iterator[tuple[NodeSlots, int]]:
        """(node, its counts code) of the best way to place ``code``'s members here."""
        if self.slots is not None:
            if code:
                yield self.slots, code
            return
        for child, split in reversed(list(zip(self.children, self.splits, strict=True))):
            share = split[code]
            yield from child.shares(share)
            code -= share


@dataclass(frozen=True)
class Gang:
    domain: str  # the required level's domain
    rank: int
    # in member order: kind by kind, a kind's by node name, a node's in order
    members: list[tuple[DeviceNode, MemberChoice]]
    domains: dict[str, list[str]]  # level -> the domains used there, by name


@dataclass(frozen=True)
class DomainFit:
    domain: str
    holds: int  # members that fit in it (at most M)
    part: Part


def best_gangs(
    network: Network,
    slots: list[NodeSlots],
    counts: Counts,
    required: int,
    preferred: int | None,
    share_nodes: bool,
) -> tuple[list[Gang], list[DomainFit]]:
    """The best gang of every domain of the ``required`` position that holds one, best
    first; and what every such domain holds, the fullest first."""
    last = len(network.levels) - 1
    counted = tuple(range(preferred, last + 1)) if preferred is not None else ()
    fields = Fields(counted, count_nodes=preferred is not None and share_nodes)
    by_domain: dict[str, dict] = {}
    for node_slots in slots:
        path = network.domains.get(node_slots.node.name)
        if path is None:
            continue
        tree = by_domain.setdefault(path[required], {})
        for position in range(required + 1, last + 1):
            tree = tree.setdefault(path[: position + 1], {})
        tree[node_slots.node.name] = node_slots
    fits, gangs = [], []
    offered: dict[int, tuple[dict[int, int], int]] = {}  # nodes alike share their offers
    for domain, tree in by_domain.items():
        part = _part(tree, required, fields, counts, offered)
        part.best = _counted(part.best, fields.domain_unit(required))
        fits.append(DomainFit(domain, part.holds, part))
        if counts.full in part.best:
            gangs.append(_gang(network, domain, part, counts.full))
    gangs.sort(key=lambda gang: (gang.rank, gang.domain))
    fits.sort(key=lambda fit: (-fit.holds, fit.domain))
    return gangs, fits


def _part(
    tree: dict,
    position: int,
    fields: Fields,
    counts: Counts,
    offered: dict[int, tuple[dict[int, int], int]],
) -> Part:
    """The part of a domain at ``position`` whose children are ``tree``'s."""
    children = []
    for name in sorted(tree, key=str):
        child = tree[name]
        if isinstance(child, NodeSlots):
            part = _node_part(child, fields, offered)
        else:
            part = _part(child, position + 1, fields, counts, offered)
            part.best = _counted(part.best, fields.domain_unit(position + 1))
        if part.holds:
            children.append(part)
    if len(counts.wanted) == 1 and children and all(child.holds == 1 for child in children):
        return _of_singles(children, counts.total)
    return _combined(children, counts)


def _node_part(
    slots: NodeSlots, fields: Fields, offered: dict[int, tuple[dict[int, int], int]]
) -> Part:
    """A node's part: its offers ranked, once for the nodes alike (``offered``, by the
    offers' identity: nodes alike share one)."""
    known = offered.get(id(slots.offers))
    if known is None:
        rank_of, unit = fields.member, fields.node_unit()
        best, holds = {}, 0
        for code, placed in slots.offers.items():
            best[code] = sum(map(rank_of, placed)) + unit if placed else 0
            holds = max(holds, len(placed))
        known = offered[id(slots.offers)] = (best, holds)
    return Part(known[0], known[1], slots=slots)


def _counted(best: dict[int, int], unit: int) -> dict[int, int]:
    """``best`` with ``unit`` added wherever the part holds a member."""
    if not unit:
        return best
    return {code: rank + unit if code else rank for code, rank in best.items()}


def _of_singles(children: list[Part], members: int) -> Part:
    """Children of one member each, of the one kind: the best m are the m best ranked."""
    ordered = sorted(children, key=lambda child: child.best[1])
    best = {0: 0}
    for count, child in enumerate(ordered[:members], 1):
        best[count] = best[count - 1] + child.best[1]
    # The i-th child holds a member when the children up to it hold more than i.
    splits = [[1 if m > index else 0 for m in range(len(best))] for index in range(len(ordered))]
    return Part(best, len(best) - 1, ordered, splits)


def _combined(children: list[Part], counts: Counts) -> Part:
    """The min-plus combination of the children's best ranks, code by code. A code that
    fits is at most ``counts.full``: the sums past it are not tried (with one kind, every
    sum up to it fits)."""
    best = {0: 0}
    splits = []
    fitting, full = counts.fitting, counts.full
    every_sum_fits = len(counts.wanted) == 1
    for child in children:
        combined: dict[int, int] = {}
        split: dict[int, int] = {}
        before_codes = sorted(best.items())
        for share, child_rank in child.best.items():
            room = full - share
            for before, rank in before_codes:
                if before > room:
                    break
                code = before + share
                if not every_sum_fits and code not in fitting:
                    continue
                total = rank + child_rank
                current = combined.get(code)
                if current is None or total < current:
                    combined[code] = total
                    split[code] = share
        best = combined
        splits.append(split)
    return Part(best, max((counts.size(code) for code in best), default=0), children, splits)


def _gang(network: Network, domain: str, part: Part, code: int) -> Gang:
    placed = sorted(part.shares(code), key=lambda entry: entry[0].node.name)
    chosen = [(slots.node, choice) for slots, share in placed for choice in slots.offers[share]]
    chosen.sort(key=lambda member: member[1].kind)  # stable: by node within a kind
    used = {
        level: sorted({network.domains[slots.node.name][position] for slots, _ in placed})
        for position, level in enumerate(network.levels)
    }
    return Gang(domain, part.best[code], chosen, used)
