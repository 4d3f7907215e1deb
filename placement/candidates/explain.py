"""Why a request finds what it finds: each filter's count, in the order the search applies it.

``explain`` retraces a ``SearchPlan`` over the worker's copy of the providers,
with the search's own predicates:

* per slot (a class of the unsuffixed group, or a granular group: see
  ``slots``), how many providers pass each of its checks in turn
  (``SlotFilter.checks``: has the class, its units allow the amount, the amount
  is free, in_tree, traits, aggregates);
* per tree, how many trees pass each tree-level step: root_required, in_tree,
  a provider for every slot, then a placement that meets everything together
  (``group_policy=isolate``, ``same_subtree``, amounts summed where slots share a
  provider, the unsuffixed group's traits over its providers): the walk itself
  (``walk.tree_candidates``), so the last count is the number of trees the
  search answers from;
* the first step that leaves nothing, and the nearest misses: trees where one
  slot alone has no provider, through one check alone on one provider ("VCPU: 2
  short" when that check is the free amount).
"""

from dataclasses import dataclass, field

from placement.candidates.filters import Check
from placement.candidates.plan import SearchPlan
from placement.candidates.walk import tree_candidates
from placement.explaining import MAX_MISSES, Step, empties_at, steps_body
from placement.replica.world import Provider


@dataclass(frozen=True)
class SlotSteps:
    group: str  # the request group's suffix ("" for the unsuffixed group)
    resources: dict[str, int]
    steps: list[Step]


@dataclass(frozen=True)
class Miss:
    root: Provider  # the tree
    provider: Provider  # the provider that fails one check
    group: str
    check: str
    short: dict[str, int] | None  # the amounts missing, when the check is a free amount


@dataclass
class Explanation:
    slots: list[SlotSteps] = field(default_factory=list)
    trees: list[Step] = field(default_factory=list)
    misses: list[Miss] = field(default_factory=list)
    # Why nothing can match before any provider is looked at (no plan), else None.
    unmatchable: str | None = None

    @property
    def empties_at(self) -> str | None:
        """The first step that leaves nothing (None: the search finds candidates)."""
        if self.unmatchable is not None:
            return self.unmatchable
        groups = (
            (f"group {slot.group!r}" if slot.group else "the unsuffixed group", slot.steps)
            for slot in self.slots
        )
        return empties_at(groups, self.trees, "trees")


def explain(plan: SearchPlan) -> Explanation:
    world = plan.world
    providers = world.providers
    explanation = Explanation()
    names = _names(plan)
    checks_of_slot = [wanted.checks(plan.class_names, names) for wanted in plan.filter_of_slot]
    everyone = list(providers.values())
    for position, slot in enumerate(plan.slots):
        passing = everyone
        steps = [Step("providers", len(passing))]
        for check in checks_of_slot[position]:
            passing = [p for p in passing if check.test(p, providers[p.root_id])]
            steps.append(Step(check.name, len(passing)))
        explanation.slots.append(
            SlotSteps(
                slot.group.suffix,
                {plan.class_names[c]: amount for c, amount in slot.amounts},
                steps,
            )
        )
    roots = world.roots_in_order()
    explanation.trees.append(Step("trees", len(roots)))
    if plan.root_filter.required or plan.root_filter.forbidden:
        roots = [r for r in roots if plan.root_filter.matches(providers[r])]
        explanation.trees.append(Step("root_required", len(roots)))
    if plan.in_tree_roots is not None:
        roots = [r for r in roots if r in plan.in_tree_roots]
        explanation.trees.append(Step("in_tree", len(roots)))
    with_options, missing_one = [], []
    for root in roots:
        options = plan.tree_options(root)
        empty = [position for position, found in enumerate(options) if not found]
        if not empty:
            with_options.append((root, options))
        elif len(empty) == 1:
            missing_one.append((root, empty[0]))
    explanation.trees.append(Step("a provider for every group", len(with_options)))
    chains: dict[int, list[int]] = {}
    answering = [
        root
        for root, options in with_options
        if next(tree_candidates(plan, options, chains), None) is not None
    ]
    explanation.trees.append(
        Step(
            "a placement of every group together (group_policy, same_subtree, amounts "
            "summed on a shared provider)",
            len(answering),
        )
    )
    explanation.misses = _nearest_misses(plan, missing_one, checks_of_slot)
    return explanation


def _names(plan: SearchPlan) -> dict[str, dict[int, str]]:
    """The names of the trait and aggregate ids the plan's filters use."""
    world = plan.world
    wanted_traits: set[int] = set()
    wanted_aggregates: set[int] = set()
    for wanted in plan.filter_of_slot:
        wanted_traits |= wanted.forbidden_traits.union(*wanted.required_traits)
        wanted_aggregates |= wanted.forbidden_aggregates.union(*wanted.member_of)
    return {
        "traits": {i: n for n, i in world.trait_id_of_name.items() if i in wanted_traits},
        "aggregates": {
            i: u for u, i in world.aggregate_id_of_uuid.items() if i in wanted_aggregates
        },
    }


def _nearest_misses(
    plan: SearchPlan, missing_one: list[tuple[int, int]], checks_of_slot: list[list[Check]]
) -> list[Miss]:
    """Of the trees where one slot alone has no provider, the providers of that tree that
    fail one of its checks alone; the smallest shortfalls first."""
    providers = plan.world.providers
    misses = []
    for root_id, position in missing_one:
        root = providers[root_id]
        for provider_id in plan.world.trees[root_id]:
            provider = providers[provider_id]
            failed = [c for c in checks_of_slot[position] if not c.test(provider, root)]
            if len(failed) == 1:
                check = failed[0]
                misses.append(
                    Miss(
                        root,
                        provider,
                        plan.slots[position].group.suffix,
                        check.name,
                        check.short(provider),
                    )
                )
    misses.sort(key=lambda m: (m.short is None, sum((m.short or {}).values()), m.root.id))
    return misses[:MAX_MISSES]


# What a request that cannot match anything names (``plan.build_plan`` gives no plan).
UNMATCHABLE = (
    "a name that matches nothing: a resource class or trait that does not exist, an "
    "aggregate no provider is in, or an in_tree provider that does not exist"
)


def body(explanation: Explanation) -> dict:
    """The JSON of an explanation (GET /allocation_candidates/explain)."""
    return {
        "groups": [
            {
                "group": slot.group,
                "resources": slot.resources,
                "filters": steps_body(slot.steps),
            }
            for slot in explanation.slots
        ],
        "trees": steps_body(explanation.trees),
        "empties_at": explanation.empties_at,
        "nearest_misses": [
            {
                "tree": {"uuid": miss.root.uuid, "name": miss.root.name},
                "provider": {"uuid": miss.provider.uuid, "name": miss.provider.name},
                "group": miss.group,
                "fails": miss.check,
                "short": miss.short,
            }
            for miss in explanation.misses
        ],
    }
