"""Slots: what the search places, one provider each, and the filter of each.

A slot is one resource class of the unsuffixed group, one granular group (all
its classes together), or one resourceless granular group. ``ordered_slots``
orders them for early pruning: the unsuffixed group's classes first (its
trait check needs all of them), then each same_subtree set with its
resourceless groups first (they are usually the subtree's top), then the rest.
It also finds the **twins**: granular groups with identical constraints and
the same same_subtree membership, which the search places as combinations.
"""

from dataclasses import dataclass

from placement.candidates.filters import SlotFilter
from placement.candidates.request import CandidateRequest, RequestGroup


@dataclass(frozen=True)
class Slot:
    group: RequestGroup
    amounts: tuple[tuple[int, int], ...]  # (class id, amount); empty when resourceless
    twin_of: int | None = None  # position of the previous interchangeable slot


def ordered_slots(request: CandidateRequest, class_ids: dict[str, int]) -> list[Slot]:
    slots: list[Slot] = []
    for group in request.groups:
        if not group.granular:
            slots.extend(
                Slot(group, ((class_ids[name], amount),)) for name, amount in group.resources
            )
    placed = {group.suffix for group in request.groups if not group.granular}
    by_suffix = {group.suffix: group for group in request.groups}
    ordered_groups: list[RequestGroup] = []
    for suffixes in request.same_subtree:
        members = [by_suffix[s] for s in suffixes if s not in placed]
        members.sort(key=lambda g: bool(g.resources))  # resourceless first
        ordered_groups.extend(members)
        placed.update(g.suffix for g in members)
    ordered_groups.extend(g for g in request.groups if g.suffix not in placed)

    membership = {
        group.suffix: frozenset(i for i, s in enumerate(request.same_subtree) if group.suffix in s)
        for group in request.groups
    }
    last_with_key: dict[tuple, int] = {}
    for group in ordered_groups:
        key = (group.constraints(), membership[group.suffix])
        slots.append(
            Slot(
                group,
                tuple((class_ids[name], amount) for name, amount in group.resources),
                twin_of=last_with_key.get(key),
            )
        )
        last_with_key[key] = len(slots) - 1
    return slots


def slot_filter(slot, trait_ids, aggregate_ids, tree_roots) -> SlotFilter | None:
    """The filter of one slot, or None when it cannot match."""
    group = slot.group
    member_of = []
    for any_of in group.aggregates.member_of:
        known = frozenset(aggregate_ids[u] for u in any_of if u in aggregate_ids)
        if not known:
            return None
        member_of.append(known)
    tree_root = None
    if group.in_tree is not None:
        tree_root = tree_roots.get(group.in_tree)
        if tree_root is None:
            return None
    required = tuple(frozenset(trait_ids[t] for t in s) for s in group.traits.required)
    if not group.granular and len(group.resources) > 1:
        # The unsuffixed group's traits may be spread over its providers:
        # only a single-class unsuffixed group can demand them of its provider.
        required = ()
    return SlotFilter(
        amounts=slot.amounts,
        required_traits=required,
        forbidden_traits=frozenset(trait_ids[t] for t in group.traits.forbidden),
        member_of=tuple(member_of),
        forbidden_aggregates=frozenset(
            aggregate_ids[u] for u in group.aggregates.forbidden if u in aggregate_ids
        ),
        aggregates_span_root=not group.granular,
        tree_root_id=tree_root,
    )
