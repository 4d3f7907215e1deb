"""What upstream answers to GET /allocation_candidates naming a class or trait that does not exist.

Upstream looks names up as it goes and stops at the first filter that leaves
nothing: root_required's traits first (400 for an unknown one), then the roots
that have them (none: 200, no candidates); then each group in the order the
query string names it: its classes (400 "Invalid resource class in resources
parameter"), its ``member_of`` (no provider directly in it: 200), its traits
(400 "No such trait(s)"), then the group's own candidates (none: 200, and the
groups after it are never looked at). So an unknown name is refused only when
nothing before it already matched nothing; this module finds which.

It runs only when ``build_plan`` found no plan, so never for a request whose
names all exist; the search of a group on its own it may need is an ordinary
search with a cap of one candidate.
"""

from sqlalchemy import Connection

from placement import errors, query
from placement.candidates import search
from placement.candidates.filters import RootFilter
from placement.candidates.plan import build_plan, known_class_ids, known_trait_ids
from placement.candidates.request import CandidateRequest, RequestGroup
from placement.replica.world import ProviderWorld


def refuse_unknown_names(conn: Connection, world: ProviderWorld, request: CandidateRequest) -> None:
    """400 as upstream for a class or trait of ``request`` that does not exist, unless a
    filter upstream applies before it matched nothing (then return: no candidates).
    Returns at once when every name exists."""
    class_ids = known_class_ids(world, request.resource_class_names())
    trait_ids = known_trait_ids(conn, world, request.trait_names())
    if len(class_ids) == len(request.resource_class_names()) and len(trait_ids) == len(
        request.trait_names()
    ):
        return
    _refuse_unknown_traits(request.root_traits.names(), trait_ids)
    if request.root_traits and not _some_root_has(world, request.root_traits, trait_ids):
        return
    by_suffix = {group.suffix: group for group in request.groups}
    for suffix in request.query_order:
        group = by_suffix[suffix]
        unknown_class = next((name for name, _ in group.resources if name not in class_ids), None)
        if unknown_class is not None:
            raise errors.BadRequest(
                "Invalid resource class in resources parameter: No such resource class "
                f"{unknown_class}."
            )
        if group.aggregates.member_of and not _someone_in(world, group.aggregates.member_of):
            return
        _refuse_unknown_traits(group.traits.names(), trait_ids)
        if not _has_candidates_alone(conn, world, request, group):
            return


def _refuse_unknown_traits(wanted: set[str], trait_ids: dict[str, int]) -> None:
    unknown = sorted(wanted - set(trait_ids))
    if unknown:
        raise errors.BadRequest(f"No such trait(s): {', '.join(unknown)}.")


def _some_root_has(world: ProviderWorld, traits: query.TraitFilter, ids: dict[str, int]) -> bool:
    wanted = RootFilter(
        required=tuple(frozenset(ids[t] for t in any_of) for any_of in traits.required),
        forbidden=frozenset(ids[t] for t in traits.forbidden),
    )
    return any(wanted.matches(world.providers[root]) for root in world.roots_in_order())


def _someone_in(world: ProviderWorld, member_of: tuple[frozenset[str], ...]) -> bool:
    """Whether some provider is itself in an aggregate of each set (an unknown uuid is
    an aggregate nobody is in)."""
    providers: set[int] | None = None
    for any_of in member_of:
        members = set().union(
            *(
                world.in_aggregate.get(world.aggregate_id_of_uuid.get(uuid, -1), ())
                for uuid in any_of
            )
        )
        providers = members if providers is None else providers & members
        if not providers:
            return False
    return True


def _has_candidates_alone(
    conn: Connection, world: ProviderWorld, request: CandidateRequest, group: RequestGroup
) -> bool:
    """Whether ``group`` on its own (with root_required) has a candidate, trees looked at
    whole as upstream does for one group at any microversion."""
    alone = CandidateRequest(
        groups=(group,),
        group_policy=None,
        same_subtree=(),
        root_traits=request.root_traits,
        limit=None,
        query_order=(group.suffix,),
    )
    plan = build_plan(conn, world, alone, nested_aware=True)
    return plan is not None and bool(search.collect(plan, 1, _unwritten))


def _unwritten(providers: tuple[int, ...], template_key: tuple | None) -> bytes:
    return b""
