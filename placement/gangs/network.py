"""The network as levels: an ordered list of levels, broad to narrow (``spine``,
``leaf``, ``nvlink_domain``), and each node's domain at every level.

The domains form a tree: a domain's parent is the domain one level up of any node in
it, and it must be the same for every such node (a leaf switch hangs under one spine).
A domain is named within its level: ``leaf-1`` of ``leaf`` and ``leaf-1`` of ``spine``
are two domains. A node is named as its root provider; a node without domains is
outside the network, and no gang uses it.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from placement import errors

MAX_LEVELS = 8
MAX_NODES = 100_000
LEVEL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Network:
    levels: tuple[str, ...]
    domains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # node -> per level

    def position(self, level: str, where: str) -> int:
        """The level's position (0: the broadest); 400 naming ``where`` if unknown."""
        if level not in self.levels:
            known = ", ".join(self.levels) if self.levels else "none: the network has no levels"
            raise errors.BadRequest(f"{where}: unknown level {level!r} (levels: {known}).")
        return self.levels.index(level)

    def body(self) -> dict:
        return {
            "levels": list(self.levels),
            "nodes": {node: self.node_body(node) for node in sorted(self.domains)},
        }

    def node_body(self, node: str) -> dict:
        return dict(zip(self.levels, self.domains[node], strict=True))


def network_from_body(levels: list[str], nodes: Mapping[str, Mapping[str, str]]) -> Network:
    """The network a body describes, checked whole (``check``); 400 else."""
    check_levels(levels)
    network = Network(
        tuple(levels),
        {node: node_domains(levels, domains, f"nodes.{node}") for node, domains in nodes.items()},
    )
    check(network)
    return network


def check_levels(levels: list[str]) -> None:
    if not levels:
        raise errors.BadRequest("levels: give at least one level, broad to narrow.")
    if len(levels) > MAX_LEVELS:
        raise errors.BadRequest(f"levels: at most {MAX_LEVELS} levels.")
    for level in levels:
        if not LEVEL_NAME.fullmatch(level):
            raise errors.BadRequest(
                f"levels: {level!r} is not a level name (a letter, then up to 63 letters, "
                "digits, '_', '.' or '-')."
            )
    if len(set(levels)) != len(levels):
        raise errors.BadRequest("levels: a level is named twice.")


def node_domains(
    levels: tuple[str, ...] | list[str], domains: Mapping[str, str], where: str
) -> tuple[str, ...]:
    """A node's domain at each level, from its body (level -> domain); 400 for a level
    unknown or missing."""
    for level in domains:
        if level not in levels:
            known = ", ".join(levels) if levels else "none: the network has no levels"
            raise errors.BadRequest(f"{where}: unknown level {level!r} (levels: {known}).")
    missing = [level for level in levels if level not in domains]
    if missing:
        raise errors.BadRequest(f"{where}: no domain at level(s) {', '.join(missing)}.")
    return tuple(domains[level] for level in levels)


def check(network: Network) -> None:
    """400 when a domain has two parents (two nodes of it say two domains one level up)."""
    if len(network.domains) > MAX_NODES:
        raise errors.BadRequest(f"nodes: at most {MAX_NODES} nodes.")
    parents: dict[tuple[int, str], tuple[str, str]] = {}  # (position, domain) -> parent, node
    for node in sorted(network.domains):
        domains = network.domains[node]
        for position in range(1, len(network.levels)):
            key = (position, domains[position])
            parent, first = parents.setdefault(key, (domains[position - 1], node))
            if parent != domains[position - 1]:
                level, up = network.levels[position], network.levels[position - 1]
                raise errors.BadRequest(
                    f"{level} {domains[position]} has two parents at level {up}: {parent} "
                    f"(node {first}) and {domains[position - 1]} (node {node}); a domain "
                    "belongs to exactly one parent domain."
                )
