"""Run a scenario against a target and record a normalized transcript.

A target sends one request: ``HttpTarget`` to a base URL (upstream, over real
HTTP), ``FlaskTarget`` through a Flask test client (this service, in process).
After every step the runner reads back the generation of every provider (one
GET /resource_providers, at the step's microversion: the state is fresh, so every
provider is one the scenario made) and of every consumer the scenario names (GET
/allocations/{consumer}, at 1.28 at least, where its generation appears), so a
step that answers the same but changes a generation differently is caught at that
step.

Normalizing keeps what both sides must agree on and drops what must differ:
request ids, error ``detail`` and ``title`` texts, the host of a ``Location``,
error ``code`` values below 1.23, the order of lists (the API defines none), and
UUIDs the service generated (numbered in order of appearance). Fixed UUIDs are
shown by their names (``<cn1>``) so reports read well.
"""

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests

from tests.differential.scenario import (
    CONSUMERS,
    LATEST,
    NAMES,
    NO_BODY,
    SORTED_FIRST,
    ConsumerGeneration,
    Generation,
    Joined,
    Merged,
    Ref,
    Scenario,
    Step,
    version_at_least,
)

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# Error members whose values never match (texts, ids); their presence still counts.
UNCOMPARED_ERROR_MEMBERS = frozenset({"detail", "title", "request_id"})


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]  # names in lower case
    text: str

    def json(self) -> Any:
        return json.loads(self.text) if self.text.strip() else None


class Target(Protocol):
    def send(self, method: str, path: str, headers: dict[str, str], data: bytes | None) -> Reply:
        """One request; ``path`` includes the query string."""
        ...


class HttpTarget:
    """A service at a base URL, over HTTP."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.session = requests.Session()

    def send(self, method: str, path: str, headers: dict[str, str], data: bytes | None) -> Reply:
        response = self.session.request(
            method,
            self.base_url + path,
            headers=headers,
            data=data,
            allow_redirects=False,
            timeout=60,
        )
        lowered = {name.lower(): value for name, value in response.headers.items()}
        return Reply(response.status_code, lowered, response.text)

    def close(self) -> None:
        self.session.close()


class FlaskTarget:
    """This service in process, through a Flask test client."""

    def __init__(self, client) -> None:
        self.client = client

    def send(self, method: str, path: str, headers: dict[str, str], data: bytes | None) -> Reply:
        response = self.client.open(path, method=method, headers=headers, data=data)
        lowered = {name.lower(): value for name, value in response.headers.items()}
        return Reply(response.status_code, lowered, response.get_data(as_text=True))


class Unresolvable(Exception):
    """A step refers to something an earlier answer on this side does not have."""


@dataclass(frozen=True)
class Exchange:
    """One step as one side saw it, normalized."""

    step: Step
    sent: Any  # the body sent, after resolving references (for reports)
    # The status, or "unresolvable: ..." when the step could not be built on this side.
    status: int | str
    body: Any
    location: str | None
    # ((name, generation or "<status>"), ...) of every provider and named consumer.
    readback: tuple[tuple[str, Any], ...]

    def compared(self) -> tuple:
        return (self.status, self.body, self.location, self.readback)


@dataclass(frozen=True)
class Transcript:
    scenario: str
    exchanges: tuple[Exchange, ...]


def run(scenario: Scenario, target: Target) -> Transcript:
    return _Side(scenario, target).run()


class _Side:
    """One scenario's run against one target: its answers and generations so far."""

    def __init__(self, scenario: Scenario, target: Target) -> None:
        self.scenario = scenario
        self.target = target
        self.answers: dict[str, Reply] = {}
        self.generations: dict[str, Any] = {}  # uuid -> last read back
        self.consumers = _consumers(scenario)
        self.normalizer = _Normalizer()

    def run(self) -> Transcript:
        exchanges = [self._exchange(step) for step in self.scenario.steps]
        return Transcript(self.scenario.name, tuple(exchanges))

    def _exchange(self, step: Step) -> Exchange:
        try:
            path = self._resolve(step.path)
            body = NO_BODY if step.body is NO_BODY else self._resolve(step.body)
        except Unresolvable as exc:
            return Exchange(step, None, f"unresolvable: {exc}", None, None, self._readback(step))
        data: bytes | None = None
        headers = _headers(step.version)
        if step.raw is not None:
            data = step.raw.encode()
            headers["Content-Type"] = "application/json"
        elif body is not NO_BODY:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        headers.update(step.headers)
        reply = self.target.send(step.method, path, headers, data)
        if step.label:
            self.answers[step.label] = reply
        location = reply.headers.get("location")
        return Exchange(
            step=step,
            sent=self.normalizer.value(None if body is NO_BODY else body),
            status=reply.status,
            body=self._normalized_body(step, reply),
            location=self.normalizer.value(_strip_host(location)) if location else None,
            readback=self._readback(step),
        )

    def _normalized_body(self, step: Step, reply: Reply) -> Any:
        try:
            body = reply.json()
        except ValueError:
            return "<not JSON>"
        if isinstance(body, dict) and isinstance(body.get("errors"), list):
            body = {**body, "errors": [_error(e, step.version) for e in body["errors"]]}
        return self.normalizer.value(body)

    def _readback(self, step: Step) -> tuple[tuple[str, Any], ...]:
        """Every provider's generation (one list, at the step's version) and the
        generation of every consumer the scenario names (at 1.28 at least)."""
        version = _readable_version(step.version)
        reply = self.target.send("GET", "/resource_providers", _headers(version), None)
        assert reply.status == 200, f"reading providers back: {reply.status} {reply.text}"
        providers = {rp["uuid"]: rp["generation"] for rp in reply.json()["resource_providers"]}
        self.generations = dict(providers)
        seen = sorted((self.normalizer.value(uuid), gen) for uuid, gen in providers.items())
        consumer_version = version if version_at_least(version, "1.28") else "1.28"
        for uuid in self.consumers:
            reply = self.target.send(
                "GET", f"/allocations/{uuid}", _headers(consumer_version), None
            )
            if reply.status == 200:
                generation = reply.json().get("consumer_generation", "<none>")
            else:
                generation = f"<{reply.status}>"
            self.generations[uuid] = generation
            seen.append((self.normalizer.value(uuid), generation))
        return tuple(seen)

    def _resolve(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self._reference(value)
        if isinstance(value, Generation):
            generation = self.generations.get(value.provider)
            if not isinstance(generation, int):
                raise Unresolvable(f"provider {_name(value.provider)} has no generation")
            return generation
        if isinstance(value, ConsumerGeneration):
            generation = self.generations.get(value.consumer, "<none>")
            return None if generation == "<none>" else generation
        if isinstance(value, Merged):
            base = self._resolve(value.base)
            if not isinstance(base, dict):
                raise Unresolvable(f"{value.base} is not an object")
            merged = {**base, **self._resolve(dict(value.extra))}
            return {key: item for key, item in merged.items() if key not in value.drop}
        if isinstance(value, Joined):
            return "".join(str(self._resolve(part)) for part in value.parts)
        if isinstance(value, dict):
            return {self._resolve(key): self._resolve(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self._resolve(item) for item in value]
        return value

    def _reference(self, ref: Ref) -> Any:
        if ref.step not in self.answers:
            raise Unresolvable(f"no answer labelled {ref.step!r}")
        reply = self.answers[ref.step]
        if ref.header is not None:
            value = reply.headers.get(ref.header.lower())
            if value is None:
                raise Unresolvable(f"{ref.step!r} has no header {ref.header}")
            return _strip_host(value) if ref.strip_host else value
        try:
            value = reply.json()
        except ValueError as exc:
            raise Unresolvable(f"{ref.step!r} answered no JSON") from exc
        for key in ref.path:
            value = _walk(value, key, ref)
        return value


def _walk(value: Any, key: str | int, ref: Ref) -> Any:
    if key == SORTED_FIRST:
        if not isinstance(value, list) or not value:
            raise Unresolvable(f"{ref.step!r}: no element in {ref.path}")
        return min(value, key=_canonical)
    try:
        return value[key]
    except (KeyError, IndexError, TypeError) as exc:
        raise Unresolvable(f"{ref.step!r} has no {ref.path}") from exc


def _consumers(scenario: Scenario) -> list[str]:
    """The fixed consumers the scenario mentions, in order of mention."""
    mentioned: list[str] = []

    def visit(value: Any) -> None:
        if isinstance(value, str):
            mentioned.extend(found for found in UUID.findall(value) if found not in mentioned)
        elif isinstance(value, dict):
            for key, item in value.items():
                visit(key)
                visit(item)
        elif isinstance(value, list | tuple):
            for item in value:
                visit(item)
        elif isinstance(value, Joined):
            visit(value.parts)
        elif isinstance(value, Merged):
            visit(dict(value.extra))
        elif isinstance(value, Generation):
            visit(value.provider)
        elif isinstance(value, ConsumerGeneration):
            visit(value.consumer)

    for step in scenario.steps:
        visit(step.path)
        visit(step.body if step.body is not NO_BODY else None)
        visit(step.raw)
    return [u for u in mentioned if u in CONSUMERS.values()]


def _readable_version(version: str | None) -> str:
    """The step's version, or the nearest one the services have (a step may send 1.40)."""
    if version is None or not re.fullmatch(r"1\.\d+", version):
        return "1.0" if version is None else LATEST
    return version if version_at_least(LATEST, version) else LATEST


def _headers(version: str | None) -> dict[str, str]:
    headers = {"X-Auth-Token": "admin", "Accept": "application/json"}
    if version is not None:
        headers["OpenStack-API-Version"] = f"placement {version}"
    return headers


def _error(error: Any, version: str | None) -> Any:
    """An error object reduced to what must match: its members, status, code (1.23+)."""
    if not isinstance(error, dict):
        return error
    kept = {k: v for k, v in error.items() if k not in UNCOMPARED_ERROR_MEMBERS}
    if not version_at_least(version, "1.23"):
        kept.pop("code", None)
    return {**kept, "<members>": sorted(error)}


def _strip_host(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _name(uuid: str) -> str:
    return NAMES.get(uuid, uuid)


class _Normalizer:
    """Fixed UUIDs to their names, generated ones numbered; lists sorted."""

    def __init__(self) -> None:
        self.generated: dict[str, str] = {}

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return UUID.sub(self._uuid, value)
        if isinstance(value, dict):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return sorted((self.value(item) for item in value), key=_canonical)
        return value

    def _uuid(self, match: re.Match) -> str:
        uuid = match.group(0)
        if uuid in NAMES:
            return f"<{NAMES[uuid]}>"
        if uuid not in self.generated:
            self.generated[uuid] = f"<generated-{len(self.generated) + 1}>"
        return self.generated[uuid]
