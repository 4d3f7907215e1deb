"""Building provider trees by name and reading allocation candidates back by name."""

import uuid as uuid_lib


class Providers:
    """Providers created through the API, known by name."""

    def __init__(self, api) -> None:
        self.api = api
        self.uuid: dict[str, str] = {}
        self.name: dict[str, str] = {}
        self.aggregates: dict[str, str] = {}

    def aggregate(self, label: str) -> str:
        return self.aggregates.setdefault(label, str(uuid_lib.uuid4()))

    def add(self, name, parent=None, inventory=None, traits=(), aggregates=()):
        created = self.api.create_provider(name, parent=self.uuid[parent] if parent else None)
        self.uuid[name] = created["uuid"]
        self.name[created["uuid"]] = name
        if inventory:
            self.api.set_inventory(created["uuid"], **inventory)
        if traits:
            self.api.set_traits(created["uuid"], *traits)
        if aggregates:
            self.api.set_aggregates(created["uuid"], *(self.aggregate(a) for a in aggregates))
        return created["uuid"]

    def query(self, text: str) -> str:
        """``text`` with ``<name>`` replaced by provider uuids and ``{agg}`` by aggregates."""
        for name, uuid in self.uuid.items():
            text = text.replace(f"<{name}>", uuid)
        for label, uuid in self.aggregates.items():
            text = text.replace(f"{{{label}}}", uuid)
        return text

    def get(self, query: str, version: str = "1.39"):
        response = self.api.get(f"/allocation_candidates?{self.query(query)}", version=version)
        assert response.status_code == 200, response.json
        return response.json

    def candidates(self, query: str, version: str = "1.39") -> list[frozenset]:
        """Each candidate as a frozenset of (provider name, ((class, amount), ...))."""
        body = self.get(query, version)
        return [self.named(request) for request in body["allocation_requests"]]

    def named(self, request: dict) -> frozenset:
        allocations = request["allocations"]
        if isinstance(allocations, list):
            pairs = [(a["resource_provider"]["uuid"], a["resources"]) for a in allocations]
        else:
            pairs = [(uuid, a["resources"]) for uuid, a in allocations.items()]
        return frozenset(
            (self.name[uuid], tuple(sorted(resources.items()))) for uuid, resources in pairs
        )

    def mappings(self, request: dict) -> dict[str, set[str]]:
        return {
            suffix: {self.name[u] for u in uuids}
            for suffix, uuids in request.get("mappings", {}).items()
        }


def alloc(*parts) -> frozenset:
    """alloc(("CN1", "VCPU", 1, "MEMORY_MB", 512), ("SS1", "DISK_GB", 500))."""
    built = []
    for name, *pairs in parts:
        resources = dict(zip(pairs[0::2], pairs[1::2], strict=True))
        built.append((name, tuple(sorted(resources.items()))))
    return frozenset(built)
