"""Who is asking: each authentication strategy turns a request's headers into
``Credentials``, which ``placement.policy`` then judges.

* ``noauth2`` (development), as upstream's: the token is ``user[:project]``;
  the roles come from the ``X-Roles`` header, or, without one, the user
  ``admin`` is an admin (so ``admin`` and ``admin:admin`` are); the project
  is ``X-Project-Id`` or the token's, none when ``OpenStack-System-Scope`` is
  sent; no token is 401.
* ``keystone`` (production in an OpenStack cloud): keystonemiddleware's
  ``auth_token`` (``placement.keystone``) has checked the token and put who it
  belongs to in the ``X-*`` headers; they are read as oslo.context reads them,
  so the policy sees exactly what upstream's sees.
* ``token`` (production without Keystone): bearer tokens from a file map to one
  role each. Tokens arrive as ``X-Auth-Token`` or ``Authorization: Bearer``;
  they are compared in constant time and never logged. A ``reader`` token
  reads everything (the policy's ``reader_token_api``).
"""

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from oslo_context import context as oslo_context

from placement import errors

ROLES = ("admin", "service", "reader")
SYSTEM_SCOPE_HEADER = "OpenStack-System-Scope"


@dataclass(frozen=True)
class Credentials:
    roles: frozenset[str]
    project_id: str | None = None
    user_id: str | None = None
    system_scope: str | None = None
    domain_id: str | None = None
    # The token strategy's readers (``reader_token_api``).
    reads_everything: bool = False

    def policy_values(self) -> dict:
        """What the policy's checks read (oslo.context's names)."""
        return {
            "roles": sorted(self.roles),
            "project_id": self.project_id,
            "user_id": self.user_id,
            "system_scope": self.system_scope,
            "domain_id": self.domain_id,
            "reads_everything": self.reads_everything,
        }


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
        system_scope = headers.get(SYSTEM_SCOPE_HEADER) or None
        project_id = None if system_scope else headers.get("X-Project-Id") or project or user
        return Credentials(roles, project_id=project_id, user_id=user, system_scope=system_scope)


class KeystoneAuth:
    """Credentials from the headers keystonemiddleware's ``auth_token`` sets once it has
    validated the token (it answers 401 itself to a missing or invalid one)."""

    def authenticate(self, headers: Mapping[str, str]) -> Credentials:
        if headers.get("X-Identity-Status") != "Confirmed":
            raise errors.Unauthorized("This request needs a valid token.")
        environ = {
            f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()
        }
        values = oslo_context.RequestContext.from_environ(environ).to_policy_values()
        return Credentials(
            frozenset(role.lower() for role in values["roles"]),
            project_id=values["project_id"],
            user_id=values["user_id"],
            system_scope=values["system_scope"],
            domain_id=values["domain_id"],
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
