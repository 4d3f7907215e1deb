"""Bodies of the network and gang endpoints (/group_resources/network...,
/group_resources/gang_candidates, /group_resources/gang_claims). Level names, a
node's levels and the domains' parents are checked by ``placement.gangs.network``."""

from marshmallow import ValidationError, fields, validate, validates_schema

from placement.nodes.scorers import SCORER_NAMES
from placement.nodes.search_budget import MAX_BUDGET_MS
from placement.schemas import ExtensionSchema
from placement.schemas.devices import MemberRequest
from placement.schemas.fields import (
    JsonTyped,
    StrictBoolean,
    StrictInteger,
    StrictList,
    StrictNested,
    StrictString,
    UuidString,
)
from placement.schemas.group_resources import CONSUMER_TYPE_PATTERN

MAX_MEMBERS = 1024  # members of one gang


def _domains(**kwargs) -> fields.Dict:
    """A node's domains: level -> domain."""
    return fields.Dict(
        keys=StrictString(max_length=64), values=StrictString(max_length=200), **kwargs
    )


class Network(ExtensionSchema):
    """PUT /group_resources/network: the levels, broad to narrow, and every node's
    domain at each of them (level -> domain), replacing what is stored."""

    levels = StrictList(StrictString(max_length=64), required=True)
    nodes = fields.Dict(keys=StrictString(max_length=200), values=_domains(), required=True)


class NetworkNode(ExtensionSchema):
    """PUT /group_resources/network/nodes/{name}: the node's domain at each level."""

    domains = _domains(required=True)


class MemberGroup(ExtensionSchema):
    """One kind of a gang's members: ``count`` members of the ``member`` request."""

    count = StrictInteger(required=True, minimum=1, maximum=MAX_MEMBERS)
    member = StrictNested(MemberRequest, required=True)


class GangMembers(JsonTyped):
    """``members``: M (copies of the body's ``member``), or the kinds as a list of
    ``{"count": k, "member": <request>}``, members numbered kind by kind."""

    _count = StrictInteger(minimum=1, maximum=MAX_MEMBERS)
    _groups = StrictList(StrictNested(MemberGroup), min_items=1)

    def __init__(self, **kwargs) -> None:
        group = {
            "type": "object",
            "required": ["count", "member"],
            "properties": {
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_MEMBERS},
                "member": {"$ref": "#/components/schemas/MemberRequest"},
            },
            "additionalProperties": False,
        }
        one_of = [
            {"type": "integer", "minimum": 1, "maximum": MAX_MEMBERS},
            {"type": "array", "minItems": 1, "items": group},
        ]
        super().__init__(metadata={"oneOf": one_of}, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, list):
            return self._groups.deserialize(value, attr, data, **kwargs)
        return self._count.deserialize(value, attr, data, **kwargs)


def _total(members) -> int:
    return members if isinstance(members, int) else sum(group["count"] for group in members)


class GangQuery(ExtensionSchema):
    """POST /group_resources/gang_candidates: M copies of one device request
    (``members`` M and ``member``), or members of several kinds (``members`` a list)."""

    members = GangMembers(required=True)
    member = StrictNested(MemberRequest)
    required = StrictString(required=True, max_length=64)
    preferred = StrictString(max_length=64)
    share_nodes = StrictBoolean()  # default false: one member per node
    scorer = StrictString(validate=validate.OneOf(sorted(SCORER_NAMES)))
    limit = StrictInteger(minimum=1)
    # Also answer each member as the value of Koordinator's device-allocated annotation
    device_allocated = StrictBoolean()
    # The search's time budget in milliseconds (``placement.nodes.search_budget``)
    budget_ms = StrictInteger(minimum=1, maximum=MAX_BUDGET_MS)

    @validates_schema
    def _one_form_of_members(self, data, **kwargs):
        listed = isinstance(data.get("members"), list)
        if listed and "member" in data:
            raise ValidationError(
                "give 'members' as a list of {count, member} without 'member', or "
                "'members' M with 'member'.",
                field_name="member",
            )
        if not listed and "members" in data and "member" not in data:
            raise ValidationError(
                "Missing data for required field (with 'members' M; or give 'members' as "
                "a list of {count, member}).",
                field_name="member",
            )


class GangClaim(GangQuery):
    """POST /group_resources/gang_claims: a new consumer per member, claimed together."""

    gang_uuid = UuidString(required=True)
    consumer_uuids = StrictList(UuidString(), required=True, unique=True)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)
    consumer_type = StrictString(pattern=CONSUMER_TYPE_PATTERN)

    @validates_schema
    def _one_consumer_per_member(self, data, **kwargs):
        if "members" not in data or "consumer_uuids" not in data:
            return
        members = _total(data["members"])
        if len(data["consumer_uuids"]) != members:
            raise ValidationError(
                f"consumer_uuids: give one per member ({members}), not "
                f"{len(data['consumer_uuids'])}."
            )
