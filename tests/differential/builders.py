"""Steps that scenarios repeat: creating providers, setting inventories, traits and
aggregates, allocating. Each returns a step (or a tuple of steps) of the scenario
language; the runner compares these like any other step."""

from typing import Any

from tests.differential.scenario import (
    LATEST,
    NAMES,
    NO_BODY,
    PROJECT,
    USER,
    ConsumerGeneration,
    Generation,
    Step,
    get,
    post,
    put,
    version_at_least,
)


def provider(uuid: str, parent: str | None = None, version: str = LATEST, **kwargs) -> Step:
    """POST /resource_providers of a provider named after its uuid's name."""
    body: dict[str, Any] = {"name": NAMES[uuid], "uuid": uuid}
    if parent is not None:
        body["parent_provider_uuid"] = parent
    return post("/resource_providers", version, body, **kwargs)


def inventory(uuid: str, version: str = LATEST, **classes: int | dict) -> Step:
    """PUT .../inventories of ``classes`` (a total or a whole record), at the current generation."""
    records = {
        name: (value if isinstance(value, dict) else {"total": value})
        for name, value in classes.items()
    }
    body = {"resource_provider_generation": Generation(uuid), "inventories": records}
    return put(f"/resource_providers/{uuid}/inventories", version, body)


def traits(uuid: str, *names: str, version: str = LATEST) -> tuple[Step, ...]:
    """PUT .../traits (creating the custom traits first), at the current generation."""
    custom = tuple(put(f"/traits/{name}", version) for name in names if name.startswith("CUSTOM_"))
    body = {"resource_provider_generation": Generation(uuid), "traits": list(names)}
    return (*custom, put(f"/resource_providers/{uuid}/traits", version, body))


def aggregates(uuid: str, *uuids: str, version: str = LATEST) -> Step:
    """PUT .../aggregates in the body format of ``version``."""
    body: Any = list(uuids)
    if version_at_least(version, "1.19"):
        body = {"resource_provider_generation": Generation(uuid), "aggregates": list(uuids)}
    return put(f"/resource_providers/{uuid}/aggregates", version, body)


def allocation_body(
    allocations: dict[str, dict[str, int]],
    version: str | None = LATEST,
    consumer: str | None = None,
    consumer_generation: Any = NO_BODY,
) -> dict[str, Any]:
    """A PUT /allocations/{consumer} body of ``{provider: {class: amount}}`` in the format of
    ``version``; ``consumer_generation`` defaults to the consumer's as read back."""
    body: dict[str, Any]
    if version_at_least(version, "1.12"):
        body = {"allocations": {rp: {"resources": res} for rp, res in allocations.items()}}
    else:
        body = {
            "allocations": [
                {"resource_provider": {"uuid": rp}, "resources": res}
                for rp, res in allocations.items()
            ]
        }
    if version_at_least(version, "1.8"):
        body |= {"project_id": PROJECT, "user_id": USER}
    if version_at_least(version, "1.28"):
        if consumer_generation is NO_BODY:
            assert consumer is not None, "a consumer to read the generation of"
            consumer_generation = ConsumerGeneration(consumer)
        body["consumer_generation"] = consumer_generation
    if version_at_least(version, "1.38"):
        body["consumer_type"] = "INSTANCE"
    return body


def allocate(
    consumer: str,
    allocations: dict[str, dict[str, int]],
    version: str = LATEST,
    **kwargs: Any,
) -> Step:
    """PUT /allocations/{consumer} at the consumer's current generation."""
    body = allocation_body(allocations, version, consumer)
    return put(f"/allocations/{consumer}", version, body, **kwargs)


def compute_node(uuid: str, vcpu: int = 8, memory_mb: int = 4096, disk_gb: int = 100):
    """A root provider with the three classes a compute node reports."""
    return (
        provider(uuid),
        inventory(uuid, VCPU=vcpu, MEMORY_MB=memory_mb, DISK_GB=disk_gb),
    )


def show(uuid: str, version: str = LATEST) -> Step:
    return get(f"/resource_providers/{uuid}", version)
