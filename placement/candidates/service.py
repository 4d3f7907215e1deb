"""The front door of allocation candidates: one object per application (process).

``CandidateSearch`` searches this process's copy of the providers (the
application's ``Replica``, shared with the translator and the device search) and
keeps, beside it, its answers per request and tree (``answers``), the trees'
summaries (``summaries``), bounds (``bounds``) and kinds per demand
(``search.TreeKinds``), dropping those of the trees changed since its last search.
``find`` takes a parsed request and gives the body to answer with; the view only
parses and renders. What each search did (``SearchReport``) is told to
its ``SearchRecorder`` (the application's metrics).
"""

import time
from dataclasses import dataclass
from typing import Protocol

from microversion_parse import Version
from sqlalchemy import Connection

from placement.candidates import bodies, explain, ranked, search
from placement.candidates.answers import AnswerMemo, KeptAnswers
from placement.candidates.bounds import KeptBounds, TreeBoundsKept
from placement.candidates.plan import SearchPlan, build_plan
from placement.candidates.request import CandidateRequest
from placement.candidates.scoring import Scorer
from placement.candidates.summaries import TreeSummaries
from placement.candidates.unknown_names import refuse_unknown_names
from placement.candidates.uuids import ProviderUuids
from placement.collector import collector_paused
from placement.config import Config
from placement.replica.replica import Replica, TreeFollower
from placement.replica.world import ProviderWorld

MIB = 1024 * 1024


@dataclass(frozen=True)
class Cut:
    """A search its time budget stopped: how many of the trees it could look at it did."""

    trees_looked_at: int
    trees: int


@dataclass(frozen=True)
class Found:
    """What a search answers: the body (None: no candidate), and whether it was cut."""

    body: bytes | None
    cut: Cut | None = None


@dataclass(frozen=True)
class SearchReport:
    """What one search of candidates did."""

    body_reused: bool  # the body answered last time to the same request, nothing searched
    trees_looked_at: int
    trees_reused: int  # of those, answered from the answers kept for the request
    # What cut the answer short when it reached its cap (more candidates may exist):
    # "limit" (the client's) or "max_allocation_candidates"; None when it did not.
    capped_by: str | None
    requests_kept: int  # the requests whose answers are kept now, and their estimated size
    bytes_kept: int


class SearchRecorder(Protocol):
    def candidates_searched(self, report: SearchReport) -> None: ...


class _NotRecorded:
    def candidates_searched(self, report: SearchReport) -> None:
        pass


class CandidateSearch:
    def __init__(
        self, config: Config, replica: Replica, recorder: SearchRecorder | None = None
    ) -> None:
        self._randomize = config.randomize_allocation_candidates
        self._cache_budget = config.allocation_candidates_cache_mib * MIB
        self._max_candidates = config.max_allocation_candidates
        self._budget_ms = config.allocation_candidates_budget_ms
        self._replica = replica
        self.answers = AnswerMemo()  # each tree's candidates, for the requests asked lately
        self.summaries = TreeSummaries()
        self.uuids = ProviderUuids()  # each provider's, as the allocation requests write it
        self.bounds = KeptBounds()  # each tree's bounds, for the ranked requests asked lately
        self.kinds = search.TreeKinds()  # each tree's kind, for the demands asked lately
        self._follower = TreeFollower()
        self._recorder = recorder or _NotRecorded()

    def find(self, conn: Connection, request: CandidateRequest, version: Version) -> Found:
        """The JSON body of the candidates of ``request`` as ``conn`` sees the database
        (None: no candidate), and whether its time budget cut the search short. 400 for
        an unknown class or trait where upstream refuses it."""
        counts = search.SearchCounts()
        budget_ms = request.budget_ms or self._budget_ms
        with collector_paused(), self._replica.current(conn) as world:
            self.follow(world)
            plan = build_plan(conn, world, request, nested_aware=version >= (1, 29))
            if plan is None:
                refuse_unknown_names(conn, world, request)
                self._report(False, counts, None)
                return Found(None)
            cap = self._cap(request.limit)
            if request.ranked:
                ranked_body, found = self._search_ranked(
                    plan,
                    Scorer(plan, request),
                    cap,
                    version,
                    counts,
                    _deadline(budget_ms),
                    self._kept_bounds(plan, request),
                )
                self.bounds.keep_within(self._cache_budget - self.answers.bytes_kept())
                self._report(False, counts, self._capped_by(request.limit, cap, found, counts))
                return Found(ranked_body, self._cut_of(counts))
            kept = self._kept_answers(plan, version)
            # Asked again with nothing written since: the same body (see answers.py).
            body_kept_in = None if self._randomize else kept
            body_key = (cap, plan.root_filter)
            body = body_kept_in.body_for(body_key) if body_kept_in is not None else None
            body_reused = body is not None
            found = 0
            if body is None:
                # The budget is the search's: from here to the last candidate found.
                body, found = self._search(plan, cap, kept, version, counts, _deadline(budget_ms))
                if body_kept_in is not None and body is not None and not counts.cut:
                    body_kept_in.keep_body(body_key, body, self._cache_budget)
            self.answers.keep_within(self._cache_budget)
        self._report(body_reused, counts, self._capped_by(request.limit, cap, found, counts))
        return Found(body, self._cut_of(counts))

    def explain(
        self, conn: Connection, request: CandidateRequest, version: Version
    ) -> explain.Explanation:
        """Why ``request`` finds what it finds (``candidates.explain``); 400 for an unknown
        class or trait where upstream refuses it, as ``find``."""
        with collector_paused(), self._replica.current(conn) as world:
            self.follow(world)
            plan = build_plan(conn, world, request, nested_aware=version >= (1, 29))
            if plan is None:
                refuse_unknown_names(conn, world, request)
                return explain.Explanation(unmatchable=explain.UNMATCHABLE)
            return explain.explain(plan)

    def _report(
        self, body_reused: bool, counts: search.SearchCounts, capped_by: str | None
    ) -> None:
        self._recorder.candidates_searched(
            SearchReport(
                body_reused=body_reused,
                trees_looked_at=counts.trees_looked_at,
                trees_reused=counts.trees_reused,
                capped_by=capped_by,
                requests_kept=len(self.answers),
                bytes_kept=self.answers.bytes_kept(),
            )
        )

    def write_for_the_workers(self, conn: Connection) -> int:
        """Every tree's provider summaries and every provider's uuid written, as ``conn``
        sees the database, for the workers a process forks to read in place
        (``summaries.TreeSummaries``, ``uuids.ProviderUuids``); how many bytes they take."""
        with collector_paused(), self._replica.current(conn) as world:
            return self.summaries.write_every_tree(world) + self.uuids.write_every_provider(world)

    def follow(self, world: ProviderWorld) -> None:
        """Drop what is kept of the trees changed since the last search."""
        changed = self._follower.changed(world)
        if changed is None:
            self.answers.clear()
            self.bounds.clear()
            self.kinds.clear()
        elif changed:
            self.answers.drop_trees(changed)
            self.bounds.drop_trees(changed)
            self.kinds.drop_trees(changed)
        self.summaries.follow(world)
        self.uuids.follow(world)

    def _search(
        self,
        plan: SearchPlan,
        cap: int | None,
        kept: KeptAnswers | None,
        version: Version,
        counts: search.SearchCounts,
        deadline: float | None,
    ) -> tuple[bytes | None, int]:
        """The body of the candidates found (None: none), and how many were found."""
        renderer = bodies.AllocationRequests(plan, version, self.uuids)
        candidates = search.collect(
            plan,
            cap,
            renderer.render,
            kept,
            shuffle=self._randomize,
            counts=counts,
            deadline=deadline,
            kinds=self.kinds,
        )
        if not candidates:
            return None, 0
        # (text only: no more reads)
        return bodies.body(plan, candidates, version, self.summaries), len(candidates)

    def _search_ranked(
        self,
        plan: SearchPlan,
        scorer: Scorer,
        cap: int | None,
        version: Version,
        counts: search.SearchCounts,
        deadline: float | None,
        kept: TreeBoundsKept | None,
    ) -> tuple[bytes, int]:
        """The body of the best candidates (``ranked``), with their scores; only the trees'
        bounds are kept (in ``kept``)."""
        renderer = bodies.AllocationRequests(plan, version, self.uuids)
        found = ranked.best(
            plan,
            scorer,
            cap,
            renderer.render,
            shuffle=self._randomize,
            counts=counts,
            deadline=deadline,
            kept=kept,
            kinds=self.kinds,
        )
        candidates = [candidate for _, candidate in found]
        scores = [score for score, _ in found]
        return bodies.body(plan, candidates, version, self.summaries, scores), len(found)

    def _kept_bounds(self, plan: SearchPlan, request: CandidateRequest) -> TreeBoundsKept | None:
        """The trees' bounds kept for ranked requests like this one (None: not kept, as for
        ``_kept_answers``)."""
        if plan.sharing or plan.in_tree_roots is not None or self._cache_budget == 0:
            return None
        key = (
            plan.signature(),
            request.utilization,
            tuple(sorted(plan.preferred_trait_ids.items())),
        )
        return self.bounds.kept_for(key)

    @staticmethod
    def _cut_of(counts: search.SearchCounts) -> Cut | None:
        return Cut(counts.trees_looked_at, counts.trees) if counts.cut else None

    def _kept_answers(self, plan: SearchPlan, version: Version) -> KeptAnswers | None:
        """The answers kept for requests like this one (None: not kept, when the answers
        depend on sharing providers, the request looks at one tree only, or the cache is
        off)."""
        if plan.sharing or plan.in_tree_roots is not None or self._cache_budget == 0:
            return None
        return self.answers.kept_for((plan.signature(), version.major, version.minor))

    def _capped_by(
        self, limit: int | None, cap: int | None, found: int, counts: search.SearchCounts
    ) -> str | None:
        """What cut the answer short: the time budget, or the bound a capped answer met
        (``_cap``); None when nothing did."""
        if counts.cut:
            return "time_budget"
        if cap is None or found < cap:
            return None
        if limit is not None and (self._max_candidates < 0 or limit <= self._max_candidates):
            return "limit"
        return "max_allocation_candidates"

    def _cap(self, limit: int | None) -> int | None:
        """How many candidates to return: ``limit``, bounded by max_allocation_candidates."""
        if self._max_candidates < 0:
            return limit
        return self._max_candidates if limit is None else min(limit, self._max_candidates)


def _deadline(budget_ms: int | None) -> float | None:
    """When a search given ``budget_ms`` from now must stop (None: no budget)."""
    return time.monotonic() + budget_ms / 1000 if budget_ms else None
