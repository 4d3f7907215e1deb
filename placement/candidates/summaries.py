"""provider_summaries as JSON text: each tree's entries written once and kept.

A tree's entries at 1.29 and later (every inventory, traits, parent and root)
depend on nothing but the tree and the class names, so a worker keeps them per
tree until the copy says the tree changed (``TreeFollower``; a renamed class
changes every tree). Before 1.29 an answer shows only the providers it uses:
``resources`` writes one provider's entry.
"""

import orjson

from placement.replica.replica import TreeFollower
from placement.replica.world import Provider, ProviderWorld


class TreeSummaries:
    def __init__(self) -> None:
        self._text: dict[int, bytes] = {}  # root id -> JSON text
        self._follower = TreeFollower()

    def follow(self, world: ProviderWorld) -> None:
        """Drop the text of the trees changed since the last call."""
        changed = self._follower.changed(world)
        if changed is None:
            self._text.clear()
        else:
            for root_id in changed:
                self._text.pop(root_id, None)

    def of_tree(self, world: ProviderWorld, root_id: int) -> bytes:
        """The tree's entries, ``"uuid":{...},...`` (``follow`` the world first)."""
        text = self._text.get(root_id)
        if text is None:
            providers = world.providers
            root_uuid = providers[root_id].uuid
            entries = []
            for provider in (providers[p] for p in world.trees[root_id]):
                parent = providers[provider.parent_id] if provider.parent_id else None
                entries.append(
                    orjson.dumps(provider.uuid)
                    + b":"
                    + orjson.dumps(
                        {
                            "resources": resources(world, provider, None),
                            "traits": provider.trait_names(),
                            "parent_provider_uuid": parent.uuid if parent else None,
                            "root_provider_uuid": root_uuid,
                        }
                    )
                )
            text = self._text[root_id] = b",".join(entries)
        return text


def resources(world: ProviderWorld, provider: Provider, class_ids: set[int] | None) -> dict:
    """capacity and used of its inventories (only of ``class_ids`` unless None)."""
    return {
        world.class_names[class_id]: {"capacity": inventory.capacity, "used": inventory.used}
        for class_id, inventory in provider.inventories.items()
        if class_ids is None or class_id in class_ids
    }
