"""The best gang in each domain of the required level, best gangs first.

A gang is M members of one device request, every one inside one domain of the
``required`` level. Gangs are ordered by, in turn:

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
way to place m members in a domain is made of its children's best ways for their
shares (a child's share placed otherwise could be replaced by the child's best for the
same share without making the sum worse). So each domain keeps its best rank for
every m from 0 to M (``Part.best``), made from its children's by a min-plus
combination: at most (M + 1) x (its share + 1) sums per child, O(N x M^2) for N nodes
in all, against the C(N, M) gangs of N nodes. Children of one member each (a node
without sharing) combine by sorting: the best m of them are the m best ranked.
Nodes alike choose once (``slots``). One gang per required domain is answered, its
best: other gangs of one domain would share most of its nodes, and the answers are
there to offer different places.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field

from placement.devices.snapshot import DeviceNode
from placement.gangs.network import Network
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
    """A domain or a node: its best rank for each number of members it can hold."""

    best: list[int]  # best[m]: the rank of m members in it, m = 0 .. what it holds
    children: list["Part"] = field(default_factory=list)
    splits: list[list[int]] = field(default_factory=list)  # per child: its share, per m
    slots: NodeSlots | None = None

    def holds(self) -> int:
        return len(self.best) - 1

    def shares(self, members: int) -> Iterator[tuple[NodeSlots, int]]:
        """(node, members on it) of the best way to place ``members`` here."""
        if self.slots is not None:
            if members:
                yield self.slots, members
            return
        for child, split in reversed(list(zip(self.children, self.splits, strict=True))):
            share = split[members]
            yield from child.shares(share)
            members -= share


@dataclass(frozen=True)
class Gang:
    domain: str  # the required level's domain
    rank: int
    members: list[tuple[DeviceNode, MemberChoice]]  # by node name, a node's in order
    domains: dict[str, list[str]]  # level -> the domains used there, by name


@dataclass(frozen=True)
class DomainFit:
    domain: str
    holds: int  # members that fit in it (at most M)
    part: Part


def best_gangs(
    network: Network,
    slots: list[NodeSlots],
    members: int,
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
    for domain, tree in by_domain.items():
        part = _part(tree, required, fields, members)
        part.best = _counted(part.best, fields.domain_unit(required))
        fits.append(DomainFit(domain, part.holds(), part))
        if part.holds() >= members:
            gangs.append(_gang(network, domain, part, members))
    gangs.sort(key=lambda gang: (gang.rank, gang.domain))
    fits.sort(key=lambda fit: (-fit.holds, fit.domain))
    return gangs, fits


def _part(tree: dict, position: int, fields: Fields, members: int) -> Part:
    """The part of a domain at ``position`` whose children are ``tree``'s."""
    children = []
    for name in sorted(tree, key=str):
        child = tree[name]
        if isinstance(child, NodeSlots):
            part = _node_part(child, fields, members)
        else:
            part = _part(child, position + 1, fields, members)
            part.best = _counted(part.best, fields.domain_unit(position + 1))
        if part.holds():
            children.append(part)
    if children and all(child.holds() == 1 for child in children):
        return _of_singles(children, members)
    return _combined(children, members)


def _node_part(slots: NodeSlots, fields: Fields, members: int) -> Part:
    best = [0]
    for choice in slots.choices[:members]:
        best.append(best[-1] + fields.member(choice))
    return Part(_counted(best, fields.node_unit()), slots=slots)


def _counted(best: list[int], unit: int) -> list[int]:
    """``best`` with ``unit`` added wherever the part holds a member."""
    return [best[0], *(rank + unit for rank in best[1:])] if unit else best


def _of_singles(children: list[Part], members: int) -> Part:
    ordered = sorted(children, key=lambda child: child.best[1])
    best = [0]
    for child in ordered[:members]:
        best.append(best[-1] + child.best[1])
    # The best m are the first m in rank order: the i-th child holds a member when the
    # children up to it hold more than i.
    splits = [[1 if m > index else 0 for m in range(len(best))] for index in range(len(ordered))]
    return Part(best, ordered, splits)


def _combined(children: list[Part], members: int) -> Part:
    best = [0]
    splits = []
    for child in children:
        size = min(len(best) - 1 + child.holds(), members) + 1
        combined: list[int | None] = [None] * size
        split = [0] * size
        for share, child_rank in enumerate(child.best):
            for before, rank in enumerate(best[: size - share]):
                total = rank + child_rank
                current = combined[before + share]
                if current is None or total < current:
                    combined[before + share] = total
                    split[before + share] = share
        best = [rank for rank in combined if rank is not None]
        splits.append(split)
    return Part(best, children, splits)


def _gang(network: Network, domain: str, part: Part, members: int) -> Gang:
    placed = sorted(part.shares(members), key=lambda entry: entry[0].node.name)
    chosen = [(slots.node, choice) for slots, count in placed for choice in slots.choices[:count]]
    used = {
        level: sorted({network.domains[slots.node.name][position] for slots, _ in placed})
        for position, level in enumerate(network.levels)
    }
    return Gang(domain, part.best[members], chosen, used)
