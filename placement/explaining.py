"""What the three explanations share (``candidates.explain``, ``group_resources.explain``,
``devices.explain``): counting what passes each of a list of checks in turn, naming the
first check that leaves nothing, and the JSON of those counts.

The node explanations explain nodes alike once (the searches place them once) and count
them by their number: a ``Tally`` adds a weight.
"""

from collections.abc import Iterable
from dataclasses import dataclass

MAX_MISSES = 10  # nearest misses answered


@dataclass(frozen=True)
class Step:
    name: str
    passing: int  # those passing this check and every one before it


class Tally:
    """How many (nodes) pass each of ``names`` in turn."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self._passing = [0] * len(names)

    def add(self, passed: int, weight: int = 1) -> None:
        """``weight`` nodes passed the first ``passed`` checks (and failed the next)."""
        for index in range(passed):
            self._passing[index] += weight

    def steps(self) -> list[Step]:
        return [
            Step(name, passing) for name, passing in zip(self.names, self._passing, strict=True)
        ]


def empties_at(
    sections: Iterable[tuple[str, list[Step]]], whole: list[Step], whole_label: str = "nodes"
) -> str | None:
    """The first check that leaves nothing, named ``"<section>: <check>"``: sections first
    (each a requested key, device type or request group), then the steps of the ``whole``
    (nodes, or trees), labelled ``whole_label``; None when the search finds candidates."""
    for label, steps in sections:
        for step in steps:
            if step.passing == 0:
                return f"{label}: {step.name}"
    for step in whole:
        if step.passing == 0:
            return f"{whole_label}: {step.name}"
    return None


def steps_body(steps: list[Step]) -> list[dict]:
    return [{"filter": step.name, "passing": step.passing} for step in steps]


def shortfall_order(short: dict[str, int] | None, name: str) -> tuple:
    """How nearest misses are sorted: the smallest shortfall first (those without one
    last), then by node name."""
    return (short is None, sum((short or {}).values()), name)
