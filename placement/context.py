"""The request context handed to every view: connection, version, and the
application's services (its configuration and its searches' front doors)."""

from dataclasses import dataclass

import flask
from microversion_parse import Version
from sqlalchemy import Connection

from placement.config import Config
from placement.services import Services


@dataclass
class RequestContext:
    # None for the views that read nothing from the database (``routes.WITHOUT_DATABASE``).
    connection: Connection | None
    version: Version
    request: flask.Request
    request_id: str
    services: Services

    @property
    def conn(self) -> Connection:
        """The request's connection, inside its transaction."""
        assert self.connection is not None, "this view was routed without a connection"
        return self.connection

    @property
    def config(self) -> Config:
        """The application's configuration (its services')."""
        return self.services.config

    def at_least(self, major: int, minor: int) -> bool:
        """Whether the request's microversion is ``major.minor`` or later."""
        return self.version >= (major, minor)
