"""Microversions: the list of versions, and negotiation from request headers.

Each version below is one line with what it added. A request asks for a
version with ``OpenStack-API-Version: placement X.Y`` (or ``latest``); without
the header it gets the minimum.
"""

import microversion_parse

from placement import errors

SERVICE_TYPE = "placement"
HEADER = "OpenStack-API-Version"

VERSIONS = (
    "1.0",  # Initial: providers, inventories, usages, allocations
    "1.1",  # Provider aggregates
    "1.2",  # Custom resource classes
    "1.3",  # member_of on GET /resource_providers
    "1.4",  # resources filter on GET /resource_providers
    "1.5",  # DELETE /resource_providers/{uuid}/inventories
    "1.6",  # Traits
    "1.7",  # PUT /resource_classes/{name} creates idempotently, no body
    "1.8",  # project_id and user_id required in PUT /allocations
    "1.9",  # GET /usages
    "1.10",  # GET /allocation_candidates
    "1.11",  # 'allocations' link on providers
    "1.12",  # dict-style PUT /allocations and allocation_requests
    "1.13",  # POST /allocations (many consumers at once)
    "1.14",  # Nested providers: parent/root uuids, in_tree
    "1.15",  # last-modified and cache-control headers
    "1.16",  # limit on allocation candidates
    "1.17",  # required traits on allocation candidates
    "1.18",  # required traits on GET /resource_providers
    "1.19",  # aggregates carry the provider generation
    "1.20",  # POST /resource_providers answers with the provider
    "1.21",  # member_of on allocation candidates
    "1.22",  # forbidden traits (!TRAIT)
    "1.23",  # error codes in error bodies
    "1.24",  # repeated member_of
    "1.25",  # granular request groups (numeric suffixes)
    "1.26",  # inventory reserved may equal total
    "1.27",  # provider summaries list every inventory
    "1.28",  # consumer generations
    "1.29",  # nested providers in allocation candidates
    "1.30",  # POST /reshaper
    "1.31",  # in_tree on allocation candidates
    "1.32",  # forbidden aggregates (member_of=!...)
    "1.33",  # string suffixes for request groups
    "1.34",  # mappings in allocation candidates
    "1.35",  # root_required
    "1.36",  # same_subtree
    "1.37",  # re-parenting and un-parenting providers
    "1.38",  # consumer types
    "1.39",  # any-of traits (required=in:A,B)
)


def _as_tuple(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


MIN_VERSION = _as_tuple(VERSIONS[0])
MAX_VERSION = _as_tuple(VERSIONS[-1])


def min_version_string() -> str:
    return VERSIONS[0]


def max_version_string() -> str:
    return VERSIONS[-1]


def negotiate(headers) -> microversion_parse.Version:
    """The version a request asked for, checked against what we serve.

    Raises BadRequest for a malformed header and NotAcceptable for a
    version outside MIN_VERSION..MAX_VERSION.
    """
    try:
        requested = microversion_parse.get_version(headers, service_type=SERVICE_TYPE)
    except ValueError as exc:
        raise errors.BadRequest(f"invalid version header: {exc}") from exc
    if requested is None:
        requested = min_version_string()
    elif requested.strip().lower() == "latest":
        requested = max_version_string()
    try:
        version = microversion_parse.parse_version_string(requested)
    except (TypeError, ValueError) as exc:
        raise errors.BadRequest(f"invalid version string: {requested}") from exc
    version.min_version = MIN_VERSION
    version.max_version = MAX_VERSION
    if not version.matches():
        raise errors.NotAcceptable(
            f"Unacceptable version header: {requested}. "
            f"This service supports {min_version_string()} to {max_version_string()}.",
            extra={"min_version": min_version_string(), "max_version": max_version_string()},
        )
    return version
