"""A node search's time budget (``budget_ms``), shared by the translator's and the device
searches: when the search must stop, and how many of its nodes it looked at when it did.

A search is handed a ``SearchBudget`` and starts its clock when it starts (the nodes
brought up to date); a claim's later searches, after a lost race, keep the first one's
clock, so that the budget bounds the claim. The searches' loops test ``timed``, a plain
attribute, before they ask whether the deadline passed, so that a search without a
budget pays no call per node. A search the deadline stopped says how far it got
(``Cut``), and answers what it found: each node it looked at is placed whole, so every
candidate is valid.
"""

import time
from dataclasses import dataclass

MAX_BUDGET_MS = 9_999_999  # as GET /allocation_candidates's budget_ms
# The response header of an answer its budget cut short, as GET /allocation_candidates's.
CUT_HEADER = "Placement-Search-Cut"


@dataclass(frozen=True)
class Cut:
    """A search its budget stopped: how many of the nodes it could look at it did."""

    nodes_looked_at: int
    nodes: int

    def body(self) -> dict[str, int]:
        return {"nodes_looked_at": self.nodes_looked_at, "nodes": self.nodes}

    def header(self) -> str:
        return f"nodes={self.nodes_looked_at}/{self.nodes}"

    @staticmethod
    def sentence_of(cut: "Cut | None") -> str:
        """What a refusal adds for a search its budget stopped (nothing without one)."""
        if cut is None:
            return ""
        return (
            f" The time budget ran out after {cut.nodes_looked_at} of {cut.nodes} "
            "node(s) were looked at."
        )


class SearchBudget:
    """A budget in milliseconds (None or 0: none), its deadline once started, and the
    cut of the last search it stopped."""

    def __init__(self, budget_ms: int | None = None) -> None:
        self.budget_ms = budget_ms or None
        # Whether there is a budget at all: what the searches' loops test first.
        self.timed = self.budget_ms is not None
        self._deadline: float | None = None
        self.cut: Cut | None = None

    def start(self) -> None:
        """A search starts: the clock starts unless it runs already (a claim choosing
        again keeps it), and the last search's cut is forgotten."""
        self.cut = None
        if self.budget_ms is not None and self._deadline is None:
            self._deadline = time.monotonic() + self.budget_ms / 1000

    def passed(self) -> bool:
        """Whether the deadline has passed (never, without a budget or before ``start``)."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    def stop(self, nodes_looked_at: int, nodes: int) -> None:
        """The search stops here, having looked at ``nodes_looked_at`` of ``nodes``."""
        self.cut = Cut(nodes_looked_at, nodes)
