"""A node's allocatable key map -> the provider tree it should have.

The node itself is the root provider and holds the base resources; every
``name/index`` group is a child provider under the group above it, holding
the base resources written at that group. Amounts of 0 create no inventory
(placement has no empty inventories) but the group provider still exists.
"""

from dataclasses import dataclass

from placement import errors
from placement.group_resources.keys import KeyGroup, parse_key_map
from placement.group_resources.levels import LevelConflict, Levels
from placement.nodes.naming import Naming, normalized
from placement.nodes.quantities import amount_in_unit


@dataclass(frozen=True)
class DesiredProvider:
    path: tuple[str, ...]  # () for the node itself
    level: str | None
    inventories: dict[str, int]  # resource class -> total
    keys: dict[str, str]  # resource class -> the key it came from

    @property
    def parent_path(self) -> tuple[str, ...] | None:
        return None if not self.path else self.path[:-2]


@dataclass(frozen=True)
class DesiredTree:
    providers: list[DesiredProvider]  # parents before children
    levels: Levels


def desired_tree(resources: object, naming: Naming) -> DesiredTree:
    """What the node map ``resources`` asks for; 400 naming the key for bad input."""
    root = parse_key_map(resources, "node resources")
    providers = [_desired_provider(group, naming) for group in root.walk()]
    _refuse_classes_on_two_levels(providers)
    try:
        levels = Levels.from_paths(p.path for p in providers if p.path)
    except LevelConflict as exc:
        raise errors.BadRequest(
            f"The node resources need one place per group level: {exc}."
        ) from exc
    return DesiredTree(providers=providers, levels=levels)


def _refuse_classes_on_two_levels(providers: list[DesiredProvider]) -> None:
    """One class, one level: ``gpu_cards`` on the node and ``gpu/dev0/cards`` would share
    CUSTOM_GPU_CARDS, and a request for one could be served by the other."""
    seen: dict[str, DesiredProvider] = {}
    for provider in providers:
        for resource_class, key in provider.keys.items():
            first = seen.setdefault(resource_class, provider)
            if normalized_level(first) != normalized_level(provider):
                raise errors.BadRequest(
                    f"Keys {first.keys[resource_class]!r} and {key!r} are on different levels "
                    f"but both become resource class {resource_class}."
                )


def normalized_level(provider: DesiredProvider) -> str | None:
    return normalized(provider.level) if provider.level is not None else None


def _desired_provider(group: KeyGroup, naming: Naming) -> DesiredProvider:
    inventories: dict[str, int] = {}
    keys: dict[str, str] = {}
    for base_name, (key, value) in group.base.items():
        resource_class = naming.resource_class(group.name, base_name)
        if resource_class in keys:
            raise errors.BadRequest(
                f"Keys {keys[resource_class]!r} and {key!r} both become resource class "
                f"{resource_class}."
            )
        amount = amount_in_unit(value, naming.unit(base_name, group.name), key, resource_class)
        keys[resource_class] = key
        if amount > 0:
            inventories[resource_class] = amount
    return DesiredProvider(path=group.path, level=group.name, inventories=inventories, keys=keys)
