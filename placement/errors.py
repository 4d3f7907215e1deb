"""Error codes and the exceptions that carry them to the one error handler.

Codes are namespaced constants from the Placement API reference. They are
never reused for another meaning. They appear in error bodies from
microversion 1.23 on.
"""

from http import HTTPStatus

DEFAULT = "placement.undefined_code"
INVENTORY_INUSE = "placement.inventory.inuse"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
PROVIDER_IN_USE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
RESOURCE_PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
ILLEGAL_DUPLICATE_QUERYPARAM = "placement.query.duplicate_key"
QUERYPARAM_BAD_VALUE = "placement.query.bad_value"
QUERYPARAM_MISSING_VALUE = "placement.query.missing_value"
# The group-resource translator (/group_resources, not part of the Placement API).
GROUP_UNPLACEABLE = "placement.group_resources.unplaceable"
GROUP_CONSUMER_EXISTS = "placement.group_resources.consumer_exists"
GROUP_DEVICE_NODE = "placement.group_resources.device_node"
GANG_EXISTS = "placement.group_resources.gang_exists"


class PlacementError(Exception):
    """An error answered to the client in the API's error format."""

    status: int = HTTPStatus.BAD_REQUEST

    def __init__(
        self,
        detail: str,
        code: str = DEFAULT,
        headers: dict[str, str] | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.code = code
        self.headers = headers or {}
        # Additional members of the error object (e.g. max_version on a 406).
        self.extra = extra or {}

    @property
    def title(self) -> str:
        return HTTPStatus(self.status).phrase


class BadRequest(PlacementError):
    status = HTTPStatus.BAD_REQUEST


class Unauthorized(PlacementError):
    status = HTTPStatus.UNAUTHORIZED


class Forbidden(PlacementError):
    status = HTTPStatus.FORBIDDEN


class NotFound(PlacementError):
    status = HTTPStatus.NOT_FOUND


class MethodNotAllowed(PlacementError):
    status = HTTPStatus.METHOD_NOT_ALLOWED


class NotAcceptable(PlacementError):
    status = HTTPStatus.NOT_ACCEPTABLE


class Conflict(PlacementError):
    status = HTTPStatus.CONFLICT


class UnsupportedMediaType(PlacementError):
    status = HTTPStatus.UNSUPPORTED_MEDIA_TYPE


class InternalServerError(PlacementError):
    status = HTTPStatus.INTERNAL_SERVER_ERROR


class ConcurrentUpdate(Conflict):
    """A generation did not match: someone else changed the object first."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, code=CONCURRENT_UPDATE)
