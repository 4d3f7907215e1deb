"""The routes of the Placement API (upstream's): each URL and method, its view, how it runs,
its policy rule, its body and its answers."""

from placement import microversion
from placement.handlers import (
    aggregate,
    allocation,
    allocation_candidate,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    root,
    trait,
    usage,
)
from placement.routes.route import NO_BODY, READ, SNAPSHOT_READ, Empty, Route, Runs
from placement.schemas import aggregate as aggregate_schemas
from placement.schemas import allocation as allocation_schemas
from placement.schemas import inventory as inventory_schemas
from placement.schemas import names as name_schemas
from placement.schemas import resource_provider as provider_schemas

LATEST = microversion.MAX_VERSION
NO_PROVIDER = "No such provider."
GENERATION = "The generation given is not the provider's (or it changed concurrently)."

PLACEMENT_API: dict[str, dict[str, Route]] = {
    "/": {"GET": Route(root.home, Runs.WITHOUT_DATABASE, answers={200: "The version document."})},
    "/resource_providers": {
        "GET": Route(
            resource_provider.list_providers,
            READ,
            rule="placement:resource_providers:list",
            answers={
                200: "The providers.",
                400: "A malformed query parameter, an unknown resource class or trait.",
            },
        ),
        "POST": Route(
            resource_provider.create_provider,
            rule="placement:resource_providers:create",
            body=provider_schemas.CreateNestedProvider(),
            answers={
                200: "The new provider (from 1.20).",
                201: Empty("Created, no body (before 1.20); Location names it."),
                400: "The body does not validate; the parent does not exist.",
                409: "A provider with this name or uuid exists.",
            },
        ),
    },
    "/resource_providers/<uuid>": {
        "GET": Route(
            resource_provider.show_provider,
            READ,
            rule="placement:resource_providers:show",
            answers={200: "The provider.", 404: NO_PROVIDER},
        ),
        "PUT": Route(
            resource_provider.update_provider,
            rule="placement:resource_providers:update",
            body=provider_schemas.UpdateNestedProvider(),
            answers={
                200: "The updated provider.",
                400: "The body does not validate; the parent is refused.",
                404: NO_PROVIDER,
                409: "Another provider has this name.",
            },
        ),
        "DELETE": Route(
            resource_provider.delete_provider,
            rule="placement:resource_providers:delete",
            answers={
                204: Empty("Deleted."),
                404: NO_PROVIDER,
                409: "The provider has children or allocations, or changed concurrently.",
            },
        ),
    },
    "/resource_providers/<uuid>/inventories": {
        "GET": Route(
            inventory.list_inventories,
            READ,
            rule="placement:resource_providers:inventories:list",
            answers={200: "The provider's inventories.", 404: NO_PROVIDER},
        ),
        "POST": Route(
            inventory.create_inventory,
            rule="placement:resource_providers:inventories:create",
            body=inventory_schemas.CreateInventory(),
            answers={
                201: "The new inventory; Location names it.",
                400: "The body does not validate; the capacity rule; an unknown resource class.",
                404: NO_PROVIDER,
                409: "The provider already has inventory of this class, or changed concurrently.",
            },
        ),
        "PUT": Route(
            inventory.replace_inventories,
            rule="placement:resource_providers:inventories:update",
            body=inventory_schemas.ReplaceInventories(),
            answers={
                200: "The provider's inventories.",
                400: "The body does not validate; the capacity rule; an unknown resource class.",
                404: NO_PROVIDER,
                409: GENERATION + " A removed class has allocations.",
            },
        ),
        "DELETE": Route(
            inventory.delete_inventories,
            rule="placement:resource_providers:inventories:delete",
            answers={
                204: Empty("Deleted."),
                404: NO_PROVIDER,
                405: "A microversion below 1.5.",
                409: "Some class has allocations, or the provider changed concurrently.",
            },
        ),
    },
    "/resource_providers/<uuid>/inventories/<resource_class>": {
        "GET": Route(
            inventory.show_inventory,
            READ,
            rule="placement:resource_providers:inventories:show",
            answers={
                200: "The inventory.",
                404: "No such provider, or it has no inventory of this class.",
            },
        ),
        "PUT": Route(
            inventory.update_inventory,
            rule="placement:resource_providers:inventories:update",
            body=inventory_schemas.UpdateInventory(),
            answers={
                200: "The inventory.",
                400: "The body does not validate; the capacity rule.",
                404: "No such provider, or no such resource class.",
                409: GENERATION,
            },
        ),
        "DELETE": Route(
            inventory.delete_inventory,
            rule="placement:resource_providers:inventories:delete",
            answers={
                204: Empty("Deleted."),
                404: "No such provider, or it has no inventory of this class.",
                409: "The class has allocations, or the provider changed concurrently.",
            },
        ),
    },
    "/resource_providers/<uuid>/usages": {
        "GET": Route(
            usage.provider_usages,
            READ,
            rule="placement:resource_providers:usages",
            answers={200: "The provider's usages.", 404: NO_PROVIDER},
        )
    },
    "/resource_providers/<uuid>/allocations": {
        "GET": Route(
            allocation.provider_allocations,
            READ,
            rule="placement:resource_providers:allocations:list",
            answers={200: "The provider's allocations.", 404: NO_PROVIDER},
        )
    },
    "/resource_providers/<uuid>/aggregates": {
        "GET": Route(
            aggregate.show_aggregates,
            READ,
            rule="placement:resource_providers:aggregates:list",
            answers={200: "The provider's aggregates.", 404: NO_PROVIDER},
        ),
        "PUT": Route(
            aggregate.set_aggregates,
            rule="placement:resource_providers:aggregates:update",
            body=aggregate_schemas.ProviderAggregates(),
            answers={
                200: "The provider's aggregates.",
                400: "The body does not validate.",
                404: NO_PROVIDER,
                409: GENERATION,
            },
        ),
    },
    "/resource_providers/<uuid>/traits": {
        "GET": Route(
            trait.list_provider_traits,
            READ,
            rule="placement:resource_providers:traits:list",
            answers={200: "The provider's traits.", 404: NO_PROVIDER},
        ),
        "PUT": Route(
            trait.set_provider_traits,
            rule="placement:resource_providers:traits:update",
            body=name_schemas.ProviderTraits(),
            answers={
                200: "The provider's traits.",
                400: "The body does not validate; an unknown trait.",
                404: NO_PROVIDER,
                409: GENERATION,
            },
        ),
        "DELETE": Route(
            trait.delete_provider_traits,
            rule="placement:resource_providers:traits:delete",
            answers={
                204: Empty("Deleted."),
                404: NO_PROVIDER,
                409: "The provider changed concurrently.",
            },
        ),
    },
    "/resource_classes": {
        "GET": Route(
            resource_class.list_resource_classes,
            READ,
            rule="placement:resource_classes:list",
            answers={200: "The resource classes."},
        ),
        "POST": Route(
            resource_class.create_resource_class,
            rule="placement:resource_classes:create",
            body=name_schemas.CreateResourceClass(),
            answers={
                201: Empty("Created; Location names it."),
                400: "The body does not validate (not a custom name).",
                409: "The class exists.",
            },
        ),
    },
    "/resource_classes/<name>": {
        "GET": Route(
            resource_class.show_resource_class,
            READ,
            rule="placement:resource_classes:show",
            answers={200: "The class.", 404: "No such class."},
        ),
        "PUT": Route(
            resource_class.put_resource_class,
            body=NO_BODY,
            rule="placement:resource_classes:update",
            answers={
                200: "Renamed (1.2 to 1.6, with a body {name}).",
                201: Empty("Created (from 1.7, without a body)."),
                204: Empty("It existed (from 1.7)."),
                400: "Not a custom class name; a standard class; (1.2 to 1.6) the body does not "
                "validate.",
                404: "(1.2 to 1.6) No such class.",
                409: "(1.2 to 1.6) A class with the new name exists.",
                415: "(1.2 to 1.6) The body is not application/json.",
            },
        ),
        "DELETE": Route(
            resource_class.delete_resource_class,
            rule="placement:resource_classes:delete",
            answers={
                204: Empty("Deleted."),
                400: "A standard class.",
                404: "No such class.",
                409: "Some provider has inventory or allocations of the class.",
            },
        ),
    },
    "/allocations": {
        "POST": Route(
            allocation.post_allocations,
            rule="placement:allocations:manage",
            body=allocation_schemas.post_schema(LATEST),
            answers={
                204: Empty("Written."),
                400: "The body does not validate; a provider or resource class does not exist.",
                409: "A generation does not match; inventory, a unit rule or capacity refuses it.",
            },
        )
    },
    "/allocations/<consumer_uuid>": {
        "GET": Route(
            allocation.show_allocations,
            READ,
            rule="placement:allocations:list",
            answers={200: "The consumer's allocations (none: empty)."},
        ),
        "PUT": Route(
            allocation.put_allocations,
            rule="placement:allocations:update",
            body=allocation_schemas.put_schema(LATEST),
            answers={
                204: Empty("Written."),
                400: "Not a consumer uuid; the body does not validate; a provider or resource "
                "class "
                "does not exist.",
                409: "The consumer generation does not match; inventory, a unit rule or capacity "
                "refuses it.",
            },
        ),
        "DELETE": Route(
            allocation.delete_allocations,
            rule="placement:allocations:delete",
            answers={
                204: Empty("Deleted."),
                404: "The consumer has no allocations.",
                409: "Another request moved the consumer's allocations meanwhile.",
            },
        ),
    },
    "/usages": {
        "GET": Route(
            usage.project_usages,
            READ,
            rule="placement:usages",
            answers={
                200: "The project's (or user's) usages.",
                400: "No project_id; a malformed or unknown query parameter.",
            },
        )
    },
    "/allocation_candidates": {
        "GET": Route(
            allocation_candidate.list_allocation_candidates,
            SNAPSHOT_READ,
            rule="placement:allocation_candidates:list",
            answers={
                200: "The allocation requests and provider summaries; with soft preferences "
                "(prefer$S, prefer_member_of$S, utilization) also their scores, best first.",
                400: "A malformed, missing or unknown query parameter, resource class or trait.",
            },
        )
    },
    # Why a request finds what it finds (not part of the Placement API).
    "/allocation_candidates/explain": {
        "GET": Route(
            allocation_candidate.explain_allocation_candidates,
            SNAPSHOT_READ,
            rule="placement:allocation_candidates:explain",
            answers={
                200: "Each filter's count, the step that empties the answer, the nearest misses.",
                400: "A malformed, missing or unknown query parameter, resource class or trait.",
            },
        )
    },
    "/reshaper": {
        "POST": Route(
            reshaper.reshape,
            rule="placement:reshaper:reshape",
            body=allocation_schemas.reshape_schema(LATEST),
            answers={
                204: Empty("Reshaped."),
                400: "The body does not validate; a provider or resource class does not exist.",
                409: "A generation does not match; an allocation left without inventory; a unit "
                "rule "
                "or capacity refuses it.",
            },
        )
    },
    "/traits": {
        "GET": Route(
            trait.list_traits,
            READ,
            rule="placement:traits:list",
            answers={200: "The traits.", 400: "A malformed or unknown query parameter."},
        )
    },
    "/traits/<name>": {
        "GET": Route(
            trait.show_trait,
            rule="placement:traits:show",
            answers={204: Empty("The trait exists."), 404: "No such trait."},
        ),
        "PUT": Route(
            trait.put_trait,
            body=NO_BODY,
            rule="placement:traits:update",
            answers={
                201: Empty("Created; Location names it."),
                204: Empty("It existed."),
                400: "Not a custom trait name.",
            },
        ),
        "DELETE": Route(
            trait.delete_trait,
            rule="placement:traits:delete",
            answers={
                204: Empty("Deleted."),
                400: "A standard trait.",
                404: "No such trait.",
                409: "Some provider has the trait.",
            },
        ),
    },
}
