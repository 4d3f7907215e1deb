"""The group levels of a node: which level sits directly under which.

A node advertises ``Gpugrp1/0/Gpugrp0/1/gpu/dev2/cards``: level ``gpu`` sits
under ``Gpugrp0``, under ``Gpugrp1``, under the node. The translator needs
one place per level name on a node, so that a request naming only a lower
level can be completed with the levels above it (``request_tree``).

Levels are known by their normalized name (``naming.normalized``: ``gpu``,
``GPU`` and ``Gpu`` are one level), as their traits and classes are.
"""

from collections.abc import Iterable
from dataclasses import dataclass, field

from placement.nodes.naming import normalized


class LevelConflict(ValueError):
    """A level name sits under two different levels, or under itself."""


@dataclass(frozen=True)
class Levels:
    # level -> the level it sits directly under (None: the node itself)
    parents: dict[str, str | None]
    # level -> how the node's map first wrote it (for messages and filled-in paths)
    spelling: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_paths(cls, paths: Iterable[tuple[str, ...]]) -> "Levels":
        """Levels from group paths (name, index, name, index, ...); LevelConflict if irregular."""
        parents: dict[str, str | None] = {}
        spelling: dict[str, str] = {}
        for path in paths:
            written = path[0::2]
            names = [normalized(name) for name in written]
            for depth, name in enumerate(names):
                spelling.setdefault(name, written[depth])
                parent = names[depth - 1] if depth else None
                if name in names[:depth]:
                    raise LevelConflict(f"level {written[depth]!r} is nested inside itself")
                if parents.setdefault(name, parent) != parent:
                    raise LevelConflict(
                        f"level {written[depth]!r} sits under "
                        f"{_describe(parents[name], spelling)} and under "
                        f"{_describe(parent, spelling)}"
                    )
        return cls(parents, spelling)

    def written(self, level: str) -> str:
        return self.spelling.get(level, level)

    def ancestors(self, level: str) -> list[str]:
        """The levels above ``level``, the top one first."""
        chain: list[str] = []
        current = self.parents.get(level)
        while current is not None and current not in chain:
            chain.append(current)
            current = self.parents.get(current)
        return chain[::-1]

    def levels_between(self, upper: str | None, lower: str) -> list[str] | None:
        """The levels strictly between ``upper`` (None: the node) and ``lower``, top first.

        None when ``lower`` is not a level of the node below ``upper``.
        """
        if lower not in self.parents:
            return None
        above = self.ancestors(lower)
        if upper is None:
            return above
        if upper not in above:
            return None
        return above[above.index(upper) + 1 :]

    def shape(self) -> tuple:
        """A hashable value equal for nodes with the same levels."""
        return tuple(sorted((name, parent or "") for name, parent in self.parents.items()))


def _describe(level: str | None, spelling: dict[str, str]) -> str:
    return "the node" if level is None else repr(spelling.get(level, level))
