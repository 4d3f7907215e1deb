"""What the OpenAPI document says of each view: its request body, its own answers, its page.

Keyed by the views of ``placement.routes`` (a test checks that every view is here).
The answers are each view's own, as api-ref/ documents them (a test checks that every
status api-ref/ gives a route is here); those of the request's way to the view (the
microversion header, the token, policy, the version a view needs, a body that is not
JSON) are added by ``document``.
"""

from collections.abc import Callable

import marshmallow

from placement import microversion
from placement.handlers import (
    aggregate,
    allocation,
    allocation_candidate,
    devices,
    gangs,
    group_resources,
    health,
    inventory,
    k8s_scheduler,
    openapi,
    reshaper,
    resource_class,
    resource_provider,
    root,
    trait,
    usage,
)
from placement.schemas import aggregate as aggregate_schemas
from placement.schemas import allocation as allocation_schemas
from placement.schemas import devices as device_schemas
from placement.schemas import gangs as gang_schemas
from placement.schemas import group_resources as group_schemas
from placement.schemas import inventory as inventory_schemas
from placement.schemas import k8s_scheduler as extender_schemas
from placement.schemas import names as name_schemas
from placement.schemas import resource_provider as provider_schemas

# The page of api-ref/ that documents the routes of each handler module (and names its tag).
PAGES = {
    "aggregate": "aggregates",
    "allocation": "allocations",
    "allocation_candidate": "allocation_candidates",
    "devices": "devices",
    "gangs": "gangs",
    "group_resources": "group_resources",
    "health": "root",
    "inventory": "inventories",
    "k8s_scheduler": "k8s_scheduler",
    "openapi": "root",
    "reshaper": "reshaper",
    "resource_class": "resource_classes",
    "resource_provider": "resource_providers",
    "root": "root",
    "trait": "traits",
    "usage": "usages",
}


def page(view: Callable) -> str:
    return PAGES[view.__module__.rpartition(".")[2]]


def request_bodies() -> dict[Callable, marshmallow.Schema | marshmallow.fields.Field]:
    """The body each view reads, at the latest microversion (the views' own dispatch
    functions choose it where it changed)."""
    latest = microversion.MAX_VERSION
    return {
        resource_provider.create_provider: provider_schemas.CreateNestedProvider(),
        resource_provider.update_provider: provider_schemas.UpdateNestedProvider(),
        inventory.create_inventory: inventory_schemas.CreateInventory(),
        inventory.replace_inventories: inventory_schemas.ReplaceInventories(),
        inventory.update_inventory: inventory_schemas.UpdateInventory(),
        aggregate.set_aggregates: aggregate_schemas.ProviderAggregates(),
        trait.set_provider_traits: name_schemas.ProviderTraits(),
        resource_class.create_resource_class: name_schemas.CreateResourceClass(),
        allocation.put_allocations: allocation_schemas.put_schema(latest),
        allocation.post_allocations: allocation_schemas.post_schema(latest),
        reshaper.reshape: allocation_schemas.reshape_schema(latest),
        group_resources.sync_node: group_schemas.SyncNode(),
        group_resources.translate: group_schemas.Translate(),
        group_resources.find_candidates: group_schemas.FindCandidates(),
        group_resources.explain_candidates: group_schemas.FindCandidates(),
        group_resources.claim: group_schemas.Claim(),
        devices.import_node: device_schemas.ImportNode(),
        devices.hold_checkpoints: device_schemas.ImportCheckpoints(),
        devices.import_koordinator_device: device_schemas.KoordinatorDevice(),
        devices.find_candidates: device_schemas.DeviceQuery(),
        devices.explain_candidates: device_schemas.DeviceQuery(),
        devices.claim: device_schemas.DeviceClaim(),
        gangs.set_network: gang_schemas.Network(),
        gangs.set_network_node: gang_schemas.NetworkNode(),
        gangs.find_candidates: gang_schemas.GangQuery(),
        gangs.explain_candidates: gang_schemas.GangQuery(),
        gangs.claim: gang_schemas.GangClaim(),
        k8s_scheduler.filter_nodes: extender_schemas.ExtenderArgs(),
        k8s_scheduler.prioritize_nodes: extender_schemas.ExtenderArgs(),
        k8s_scheduler.bind_pod: extender_schemas.ExtenderBindingArgs(),
        k8s_scheduler.preempt: extender_schemas.ExtenderPreemptionArgs(),
    }


# Writes that read no body at the latest microversion.
WITHOUT_BODY = frozenset({trait.put_trait, resource_class.put_resource_class})


class Empty(str):
    """The description of an answer without a body."""


NO_PROVIDER = "No such provider."
GENERATION = "The generation given is not the provider's (or it changed concurrently)."

ANSWERS: dict[Callable, dict[int, str]] = {
    root.home: {200: "The version document."},
    health.live: {200: "Alive."},
    health.ready: {200: "Ready.", 503: "The database cannot be reached (Retry-After)."},
    openapi.document: {200: "This document."},
    resource_provider.list_providers: {
        200: "The providers.",
        400: "A malformed query parameter, an unknown resource class or trait.",
    },
    resource_provider.create_provider: {
        200: "The new provider (from 1.20).",
        201: Empty("Created, no body (before 1.20); Location names it."),
        400: "The body does not validate; the parent does not exist.",
        409: "A provider with this name or uuid exists.",
    },
    resource_provider.show_provider: {200: "The provider.", 404: NO_PROVIDER},
    resource_provider.update_provider: {
        200: "The updated provider.",
        400: "The body does not validate; the parent is refused.",
        404: NO_PROVIDER,
        409: "Another provider has this name.",
    },
    resource_provider.delete_provider: {
        204: Empty("Deleted."),
        404: NO_PROVIDER,
        409: "The provider has children or allocations, or changed concurrently.",
    },
    inventory.list_inventories: {200: "The provider's inventories.", 404: NO_PROVIDER},
    inventory.create_inventory: {
        201: "The new inventory; Location names it.",
        400: "The body does not validate; the capacity rule; an unknown resource class.",
        404: NO_PROVIDER,
        409: "The provider already has inventory of this class, or changed concurrently.",
    },
    inventory.replace_inventories: {
        200: "The provider's inventories.",
        400: "The body does not validate; the capacity rule; an unknown resource class.",
        404: NO_PROVIDER,
        409: GENERATION + " A removed class has allocations.",
    },
    inventory.delete_inventories: {
        204: Empty("Deleted."),
        404: NO_PROVIDER,
        405: "A microversion below 1.5.",
        409: "Some class has allocations, or the provider changed concurrently.",
    },
    inventory.show_inventory: {
        200: "The inventory.",
        404: "No such provider, or it has no inventory of this class.",
    },
    inventory.update_inventory: {
        200: "The inventory.",
        400: "The body does not validate; the capacity rule.",
        404: "No such provider, or no such resource class.",
        409: GENERATION,
    },
    inventory.delete_inventory: {
        204: Empty("Deleted."),
        404: "No such provider, or it has no inventory of this class.",
        409: "The class has allocations, or the provider changed concurrently.",
    },
    usage.provider_usages: {200: "The provider's usages.", 404: NO_PROVIDER},
    allocation.provider_allocations: {200: "The provider's allocations.", 404: NO_PROVIDER},
    aggregate.show_aggregates: {200: "The provider's aggregates.", 404: NO_PROVIDER},
    aggregate.set_aggregates: {
        200: "The provider's aggregates.",
        400: "The body does not validate.",
        404: NO_PROVIDER,
        409: GENERATION,
    },
    trait.list_provider_traits: {200: "The provider's traits.", 404: NO_PROVIDER},
    trait.set_provider_traits: {
        200: "The provider's traits.",
        400: "The body does not validate; an unknown trait.",
        404: NO_PROVIDER,
        409: GENERATION,
    },
    trait.delete_provider_traits: {
        204: Empty("Deleted."),
        404: NO_PROVIDER,
        409: "The provider changed concurrently.",
    },
    resource_class.list_resource_classes: {200: "The resource classes."},
    resource_class.create_resource_class: {
        201: Empty("Created; Location names it."),
        400: "The body does not validate (not a custom name).",
        409: "The class exists.",
    },
    resource_class.show_resource_class: {200: "The class.", 404: "No such class."},
    resource_class.put_resource_class: {
        200: "Renamed (1.2 to 1.6, with a body {name}).",
        201: Empty("Created (from 1.7, without a body)."),
        204: Empty("It existed (from 1.7)."),
        400: "Not a custom class name; a standard class; (1.2 to 1.6) the body does not validate.",
        404: "(1.2 to 1.6) No such class.",
        409: "(1.2 to 1.6) A class with the new name exists.",
        415: "(1.2 to 1.6) The body is not application/json.",
    },
    resource_class.delete_resource_class: {
        204: Empty("Deleted."),
        400: "A standard class.",
        404: "No such class.",
        409: "Some provider has inventory or allocations of the class.",
    },
    allocation.post_allocations: {
        204: Empty("Written."),
        400: "The body does not validate; a provider or resource class does not exist.",
        409: "A generation does not match; inventory, a unit rule or capacity refuses it.",
    },
    allocation.show_allocations: {200: "The consumer's allocations (none: empty)."},
    allocation.put_allocations: {
        204: Empty("Written."),
        400: "Not a consumer uuid; the body does not validate; a provider or resource class "
        "does not exist.",
        409: "The consumer generation does not match; inventory, a unit rule or capacity "
        "refuses it.",
    },
    allocation.delete_allocations: {
        204: Empty("Deleted."),
        404: "The consumer has no allocations.",
        409: "Another request moved the consumer's allocations meanwhile.",
    },
    usage.project_usages: {
        200: "The project's (or user's) usages.",
        400: "No project_id; a malformed or unknown query parameter.",
    },
    allocation_candidate.list_allocation_candidates: {
        200: "The allocation requests and provider summaries; with soft preferences "
        "(prefer$S, prefer_member_of$S, utilization) also their scores, best first.",
        400: "A malformed, missing or unknown query parameter, resource class or trait.",
    },
    allocation_candidate.explain_allocation_candidates: {
        200: "Each filter's count, the step that empties the answer, the nearest misses.",
        400: "A malformed, missing or unknown query parameter, resource class or trait.",
    },
    reshaper.reshape: {
        204: Empty("Reshaped."),
        400: "The body does not validate; a provider or resource class does not exist.",
        409: "A generation does not match; an allocation left without inventory; a unit rule "
        "or capacity refuses it.",
    },
    trait.list_traits: {200: "The traits.", 400: "A malformed or unknown query parameter."},
    trait.show_trait: {204: Empty("The trait exists."), 404: "No such trait."},
    trait.put_trait: {
        201: Empty("Created; Location names it."),
        204: Empty("It existed."),
        400: "Not a custom trait name.",
    },
    trait.delete_trait: {
        204: Empty("Deleted."),
        400: "A standard trait.",
        404: "No such trait.",
        409: "Some provider has the trait.",
    },
    group_resources.list_nodes: {200: "The nodes."},
    group_resources.show_node: {200: "The node.", 404: "No node of that name."},
    group_resources.sync_node: {
        200: "The node (it existed).",
        201: "The node (created).",
        400: "The body does not validate; a bad name, key or amount.",
        409: "Allocations, another provider's name or uuid, a concurrent change, or a device "
        "node refuse the change.",
    },
    group_resources.delete_node: {
        204: Empty("Deleted."),
        404: "No node of that name.",
        409: "Providers it did not create, allocations, or a concurrent change.",
    },
    group_resources.translate: {
        200: "The queries.",
        400: "The body does not validate; a bad key or amount.",
    },
    group_resources.find_candidates: {
        200: "The candidates (also when nothing fits).",
        400: "The body does not validate; a bad key or amount; an empty request.",
    },
    group_resources.explain_candidates: {
        200: "Each check's count per key, the node steps, the step that empties the answer, "
        "the nearest misses.",
        400: "The body does not validate; a bad key or amount; an empty request.",
    },
    group_resources.claim: {
        200: "The claimed candidate.",
        400: "The body does not validate; a bad key or amount.",
        409: "The consumer exists; no node can take it; concurrent claims.",
    },
    devices.list_nodes: {200: "The device nodes."},
    devices.show_node: {200: "The device node.", 404: "No device node of that name."},
    devices.import_node: {
        200: "The node (it existed).",
        201: "The node (created).",
        400: "The body does not validate; a malformed matrix or device list.",
        409: "Allocations, another provider's name or uuid, or a concurrent change refuse it.",
    },
    devices.delete_node: {
        204: Empty("Deleted."),
        404: "No device node of that name.",
        409: "Allocations, or providers it did not create.",
    },
    devices.hold_checkpoints: {
        200: "What the checkpoint holds: each pod's consumer and devices; pods released.",
        400: "The body does not validate; an unknown resource or device; a device given twice.",
        404: "No device node of that name.",
        409: "A device another consumer holds; a pod's consumer not from this node's "
        "checkpoints; the tree out of sync; a concurrent change.",
    },
    devices.find_candidates: {
        200: "The candidates (also when nothing fits).",
        400: "The body does not validate; a bad resource, amount or annotation.",
    },
    devices.explain_candidates: {
        200: "Each check's count per device type, the node steps, the step that empties the "
        "answer, the nearest misses.",
        400: "The body does not validate; a bad resource, amount or annotation.",
    },
    devices.claim: {
        200: "The claimed candidate.",
        400: "The body does not validate; a bad resource, amount or annotation.",
        409: "The consumer exists; no node can take it; concurrent claims.",
    },
    devices.import_koordinator_device: {
        200: "The device node, as GET shows it, and whether anything changed.",
        400: "Not a Device object, or another node's; a device list or checkpoint that "
        "does not read.",
        404: "A checkpoint for a node that is gone.",
        409: "A checkpointed device another consumer holds; a concurrent change.",
    },
    gangs.show_network: {200: "The levels and every node's domains."},
    gangs.set_network: {
        200: "The network as stored.",
        400: "The body does not validate; an unknown or missing level; a domain with two parents.",
    },
    gangs.show_network_node: {
        200: "The node's domains.",
        404: "No node of that name in the network.",
    },
    gangs.set_network_node: {
        200: "The node's domains (it was in the network).",
        201: "The node's domains (it is new to the network).",
        400: "The body does not validate; no levels; an unknown or missing level; a domain "
        "with two parents.",
    },
    gangs.delete_network_node: {
        204: Empty("The node left the network."),
        404: "No node of that name in the network.",
    },
    gangs.find_candidates: {
        200: "The best gang of each domain of the required level, best first (also when "
        "none fits: then the closest domains).",
        400: "The body does not validate; an unknown level; a bad member request.",
    },
    gangs.explain_candidates: {
        200: "The domains of the required level that came closest, with what they lacked.",
        400: "The body does not validate; an unknown level; a bad member request.",
    },
    gangs.claim: {
        200: "The claimed gang: every member's consumer, node and devices.",
        400: "The body does not validate; an unknown level; a bad member request.",
        409: "A consumer or the gang exists; no domain of the required level holds the gang; "
        "concurrent claims.",
    },
    gangs.show_gang: {200: "The gang's members and their allocations.", 404: "No such gang."},
    gangs.release_gang: {204: Empty("Released."), 404: "No such gang."},
    # kube-scheduler's extender verbs: an error of what was sent is a 200 whose Error
    # says it (the scheduler reads no other body), but for prioritize.
    k8s_scheduler.filter_nodes: {
        200: "ExtenderFilterResult: the nodes that pass, FailedNodes, "
        "FailedAndUnresolvableNodes; or Error.",
    },
    k8s_scheduler.prioritize_nodes: {
        200: "HostPriorityList: each node's score, 0 to 10.",
        400: "Error: the body does not read.",
    },
    k8s_scheduler.bind_pod: {
        200: "ExtenderBindingResult: Error empty when bound, else why not.",
    },
    k8s_scheduler.preempt: {
        200: "ExtenderPreemptionResult: the nodes where the pod fits once its victims are "
        "gone; or Error.",
    },
}
