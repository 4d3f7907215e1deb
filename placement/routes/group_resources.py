"""The routes of this service's own features under /group_resources (not part of the
Placement API): the group-resource key translator, device topologies, candidates and claims,
the network as levels, and gangs."""

from placement.handlers import (
    devices,
    gangs,
    group_resources,
)
from placement.routes.route import READ, SEARCH, SNAPSHOT_READ, Empty, Route
from placement.schemas import devices as device_schemas
from placement.schemas import gangs as gang_schemas
from placement.schemas import group_resources as group_schemas

GROUP_RESOURCES: dict[str, dict[str, Route]] = {
    # The group-resource key translator (not part of the Placement API).
    "/group_resources/nodes": {
        "GET": Route(
            group_resources.list_nodes,
            SNAPSHOT_READ,
            rule="placement:group_resources:nodes:list",
            answers={200: "The nodes."},
        )
    },
    "/group_resources/nodes/<name>": {
        "GET": Route(
            group_resources.show_node,
            SNAPSHOT_READ,
            rule="placement:group_resources:nodes:show",
            answers={200: "The node.", 404: "No node of that name."},
        ),
        "PUT": Route(
            group_resources.sync_node,
            rule="placement:group_resources:nodes:update",
            body=group_schemas.SyncNode(),
            answers={
                200: "The node (it existed).",
                201: "The node (created).",
                400: "The body does not validate; a bad name, key or amount.",
                409: "Allocations, another provider's name or uuid, a concurrent change, or a "
                "device "
                "node refuse the change.",
            },
        ),
        "DELETE": Route(
            group_resources.delete_node,
            rule="placement:group_resources:nodes:delete",
            answers={
                204: Empty("Deleted."),
                404: "No node of that name.",
                409: "Providers it did not create, allocations, or a concurrent change.",
            },
        ),
    },
    "/group_resources/queries": {
        "POST": Route(
            group_resources.translate,
            SEARCH,
            rule="placement:group_resources:queries:translate",
            body=group_schemas.Translate(),
            answers={
                200: "The queries.",
                400: "The body does not validate; a bad key or amount.",
            },
        )
    },
    "/group_resources/candidates": {
        "POST": Route(
            group_resources.find_candidates,
            SEARCH,
            rule="placement:group_resources:candidates:list",
            body=group_schemas.FindCandidates(),
            answers={
                200: "The candidates (also when nothing fits).",
                400: "The body does not validate; a bad key or amount; an empty request.",
            },
        )
    },
    # Why a request finds what it finds.
    "/group_resources/candidates/explain": {
        "POST": Route(
            group_resources.explain_candidates,
            SEARCH,
            rule="placement:group_resources:candidates:explain",
            body=group_schemas.FindCandidates(),
            answers={
                200: "Each check's count per key, the node steps, the step that empties the "
                "answer, "
                "the nearest misses.",
                400: "The body does not validate; a bad key or amount; an empty request.",
            },
        )
    },
    "/group_resources/claims": {
        "POST": Route(
            group_resources.claim,
            rule="placement:group_resources:claims:create",
            body=group_schemas.Claim(),
            answers={
                200: "The claimed candidate.",
                400: "The body does not validate; a bad key or amount.",
                409: "The consumer exists; no node can take it; concurrent claims.",
            },
        )
    },
    # Device topologies, device candidates and claims (on the translator's trees).
    "/group_resources/device_nodes": {
        "GET": Route(
            devices.list_nodes,
            SNAPSHOT_READ,
            rule="placement:group_resources:device_nodes:list",
            answers={200: "The device nodes."},
        )
    },
    "/group_resources/device_nodes/<name>": {
        "GET": Route(
            devices.show_node,
            SNAPSHOT_READ,
            rule="placement:group_resources:device_nodes:show",
            answers={200: "The device node.", 404: "No device node of that name."},
        ),
        "PUT": Route(
            devices.import_node,
            rule="placement:group_resources:device_nodes:update",
            body=device_schemas.ImportNode(),
            answers={
                200: "The node (it existed).",
                201: "The node (created).",
                400: "The body does not validate; a malformed matrix or device list.",
                409: "Allocations, another provider's name or uuid, or a concurrent change "
                "refuse it.",
            },
        ),
        "DELETE": Route(
            devices.delete_node,
            rule="placement:group_resources:device_nodes:delete",
            answers={
                204: Empty("Deleted."),
                404: "No device node of that name.",
                409: "Allocations, or providers it did not create.",
            },
        ),
    },
    "/group_resources/device_nodes/<name>/checkpoints": {
        "PUT": Route(
            devices.hold_checkpoints,
            rule="placement:group_resources:device_nodes:checkpoints:update",
            body=device_schemas.ImportCheckpoints(),
            answers={
                200: "What the checkpoint holds: each pod's consumer and devices; pods released.",
                400: "The body does not validate; an unknown resource or device; a device given "
                "twice.",
                404: "No device node of that name.",
                409: "A device another consumer holds; a pod's consumer not from this node's "
                "checkpoints; the tree out of sync; a concurrent change.",
            },
        )
    },
    # Koordinator's Device object of the node (and its checkpoint annotation).
    "/group_resources/device_nodes/<name>/koordinator_device": {
        "PUT": Route(
            devices.import_koordinator_device,
            rule="placement:group_resources:device_nodes:koordinator_device:update",
            body=device_schemas.KoordinatorDevice(),
            answers={
                200: "The device node, as GET shows it, and whether anything changed.",
                400: "Not a Device object, or another node's; a device list or checkpoint that "
                "does not read.",
                404: "A checkpoint for a node that is gone.",
                409: "A checkpointed device another consumer holds; a concurrent change.",
            },
        )
    },
    "/group_resources/device_candidates": {
        "POST": Route(
            devices.find_candidates,
            SEARCH,
            rule="placement:group_resources:device_candidates:list",
            body=device_schemas.DeviceQuery(),
            answers={
                200: "The candidates (also when nothing fits).",
                400: "The body does not validate; a bad resource, amount or annotation.",
            },
        )
    },
    "/group_resources/device_candidates/explain": {
        "POST": Route(
            devices.explain_candidates,
            SEARCH,
            rule="placement:group_resources:device_candidates:explain",
            body=device_schemas.DeviceQuery(),
            answers={
                200: "Each check's count per device type, the node steps, the step that empties "
                "the "
                "answer, the nearest misses.",
                400: "The body does not validate; a bad resource, amount or annotation.",
            },
        )
    },
    "/group_resources/device_claims": {
        "POST": Route(
            devices.claim,
            rule="placement:group_resources:device_claims:create",
            body=device_schemas.DeviceClaim(),
            answers={
                200: "The claimed candidate.",
                400: "The body does not validate; a bad resource, amount or annotation.",
                409: "The consumer exists; no node can take it; concurrent claims.",
            },
        )
    },
    # The network as levels, and gangs of device requests in one network domain.
    "/group_resources/network": {
        "GET": Route(
            gangs.show_network,
            SNAPSHOT_READ,
            rule="placement:group_resources:network:show",
            answers={200: "The levels and every node's domains."},
        ),
        "PUT": Route(
            gangs.set_network,
            rule="placement:group_resources:network:update",
            body=gang_schemas.Network(),
            answers={
                200: "The network as stored.",
                400: "The body does not validate; an unknown or missing level; a domain with "
                "two parents.",
            },
        ),
    },
    "/group_resources/network/nodes/<name>": {
        "GET": Route(
            gangs.show_network_node,
            READ,
            rule="placement:group_resources:network:show",
            answers={
                200: "The node's domains.",
                404: "No node of that name in the network.",
            },
        ),
        "PUT": Route(
            gangs.set_network_node,
            rule="placement:group_resources:network:update",
            body=gang_schemas.NetworkNode(),
            answers={
                200: "The node's domains (it was in the network).",
                201: "The node's domains (it is new to the network).",
                400: "The body does not validate; no levels; an unknown or missing level; a domain "
                "with two parents.",
            },
        ),
        "DELETE": Route(
            gangs.delete_network_node,
            rule="placement:group_resources:network:update",
            answers={
                204: Empty("The node left the network."),
                404: "No node of that name in the network.",
            },
        ),
    },
    "/group_resources/gang_candidates": {
        "POST": Route(
            gangs.find_candidates,
            SEARCH,
            rule="placement:group_resources:gang_candidates:list",
            body=gang_schemas.GangQuery(),
            answers={
                200: "The best gang of each domain of the required level, best first (also when "
                "none fits: then the closest domains).",
                400: "The body does not validate; an unknown level; a bad member request.",
            },
        )
    },
    "/group_resources/gang_candidates/explain": {
        "POST": Route(
            gangs.explain_candidates,
            SEARCH,
            rule="placement:group_resources:gang_candidates:explain",
            body=gang_schemas.GangQuery(),
            answers={
                200: "The domains of the required level that came closest, with what they lacked.",
                400: "The body does not validate; an unknown level; a bad member request.",
            },
        )
    },
    "/group_resources/gang_claims": {
        "POST": Route(
            gangs.claim,
            rule="placement:group_resources:gang_claims:create",
            body=gang_schemas.GangClaim(),
            answers={
                200: "The claimed gang: every member's consumer, node and devices.",
                400: "The body does not validate; an unknown level; a bad member request.",
                409: "A consumer or the gang exists; no domain of the required level holds the "
                "gang; "
                "concurrent claims.",
            },
        )
    },
    "/group_resources/gangs/<gang_uuid>": {
        "GET": Route(
            gangs.show_gang,
            READ,
            rule="placement:group_resources:gangs:show",
            answers={200: "The gang's members and their allocations.", 404: "No such gang."},
        ),
        "DELETE": Route(
            gangs.release_gang,
            rule="placement:group_resources:gangs:delete",
            answers={204: Empty("Released."), 404: "No such gang."},
        ),
    },
}
