"""Bodies of the network and gang endpoints (/group_resources/network...,
/group_resources/gang_candidates, /group_resources/gang_claims). Level names, a
node's levels and the domains' parents are checked by ``placement.gangs.network``."""

from marshmallow import ValidationError, fields, validate, validates_schema

from placement.nodes.scorers import SCORER_NAMES
from placement.schemas import ExtensionSchema
from placement.schemas.devices import MemberRequest
from placement.schemas.fields import (
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


class GangQuery(ExtensionSchema):
    """POST /group_resources/gang_candidates: M copies of one device request."""

    members = StrictInteger(required=True, minimum=1, maximum=MAX_MEMBERS)
    member = StrictNested(MemberRequest, required=True)
    required = StrictString(required=True, max_length=64)
    preferred = StrictString(max_length=64)
    share_nodes = StrictBoolean()  # default false: one member per node
    scorer = StrictString(validate=validate.OneOf(sorted(SCORER_NAMES)))
    limit = StrictInteger(minimum=1)
    # Also answer each member as the value of Koordinator's device-allocated annotation
    device_allocated = StrictBoolean()


class GangClaim(GangQuery):
    """POST /group_resources/gang_claims: a new consumer per member, claimed together."""

    gang_uuid = UuidString(required=True)
    consumer_uuids = StrictList(UuidString(), required=True, unique=True)
    project_id = StrictString(required=True)
    user_id = StrictString(required=True)
    consumer_type = StrictString(pattern=CONSUMER_TYPE_PATTERN)

    @validates_schema
    def _one_consumer_per_member(self, data, **kwargs):
        if len(data["consumer_uuids"]) != data["members"]:
            raise ValidationError(
                f"consumer_uuids: give one per member ({data['members']}), not "
                f"{len(data['consumer_uuids'])}."
            )
