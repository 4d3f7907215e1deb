"""Who is asking, and what they may do.

Two strategies:

* ``noauth2`` (development), as upstream's: the token is ``user[:project]``;
  the roles come from the ``X-Roles`` header, or, without one, the user
  ``admin`` is an admin (so ``admin`` and ``admin:admin`` are); the project
  is ``X-Project-Id`` or the token's; no token is 401.
* ``token`` (production): bearer tokens from a file map to one role each.
  Tokens arrive as ``X-Auth-Token`` or ``Authorization: Bearer``; they are
  compared in constant time and never logged.

Policy: ``admin`` and ``service`` may do everything. A ``reader`` token may
read everything (GET, HEAD). With noauth2, as upstream's default policy, a
user with the ``reader`` role may only read the usages of its own project
(``GET /usages?project_id=`` equal to its ``X-Project-Id``). Anyone else is
refused with 403.
"""

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from placement import errors

ROLES = ("admin", "service", "reader")
READ_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class Credentials:
    roles: frozenset[str]
    project_id: str | None = None
    # Token readers read everything; noauth2 readers only their project's usages.
    reads_everything: bool = False
    user_id: str | None = None  # noauth2's user (for the log); a token names no user


class NoAuth2:
    """Development authentication: trusts the headers."""

    def authenticate(self, headers: Mapping[str, str]) -> Credentials:
        token = headers.get("X-Auth-Token")
        if not token:
            raise errors.Unauthorized("This request needs an X-Auth-Token header.")
        user, _, project = token.partition(":")
        roles_header = headers.get("X-Roles")
        if roles_header is not None:
            roles = frozenset(r.strip().lower() for r in roles_header.split(",") if r.strip())
        else:
            roles = frozenset({"admin"}) if user == "admin" else frozenset()
        return Credentials(
            roles, project_id=headers.get("X-Project-Id") or project or user, user_id=user
        )


class TokenAuth:
    """Production authentication: configured bearer tokens, each with a role."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        # token -> role; encoded once so every comparison costs the same.
        self._tokens = [(token.encode(), role) for token, role in tokens.items()]

    @classmethod
    def from_file(cls, path: str) -> "TokenAuth":
        tokens: dict[str, str] = {}
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                parts = line.split()
                if len(parts) != 2 or parts[0] not in ROLES:
                    raise ValueError(
                        f"{path}:{number}: expected '<role> <token>' with role one of "
                        f"{', '.join(ROLES)}"
                    )
                tokens[parts[1]] = parts[0]
        if not tokens:
            raise ValueError(f"{path}: no tokens")
        return cls(tokens)

    def authenticate(self, headers: Mapping[str, str]) -> Credentials:
        presented = _presented_token(headers)
        if presented is None:
            raise errors.Unauthorized("This request needs a bearer token.")
        candidate = presented.encode()
        matched_role = None
        for token, role in self._tokens:
            # No early exit: the time taken does not depend on which token matched.
            if hmac.compare_digest(candidate, token):
                matched_role = role
        if matched_role is None:
            raise errors.Unauthorized("The token is not valid.")
        return Credentials(frozenset({matched_role}), reads_everything=True)


def _presented_token(headers: Mapping[str, str]) -> str | None:
    authorization = headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return headers.get("X-Auth-Token") or None


def authorize(
    credentials: Credentials, method: str, path: str, args: Mapping[str, str]
) -> None:
    """Raise Forbidden unless ``credentials`` allow ``method`` on ``path``."""
    if credentials.roles & {"admin", "service"}:
        return
    if "reader" in credentials.roles and method in READ_METHODS:
        if credentials.reads_everything:
            return
        own_project = credentials.project_id is not None and (
            args.get("project_id") == credentials.project_id
        )
        if path == "/usages" and own_project:
            return
    raise errors.Forbidden("Policy does not allow this request to be performed.")
