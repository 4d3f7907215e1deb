"""The scenario language: a scenario is a named sequence of HTTP steps, written as plain values.

A step's path and body may hold references that each side resolves against its own
earlier answers (never the other side's): a field of an earlier step's body or a
header of it (``ref``), the generation of a provider or consumer as last read back
(``generation``, ``consumer_generation``), an object built from a referenced one
(``merged``). That is how a scenario says "PUT the first allocation request exactly
as returned, plus the consumer fields", as Nova does.

The universe of fixed UUIDs lives here too: every scenario uses the same names
(``CN1``, ``INSTANCE1``, ...) on a fresh state; the runner reads back the
generation of every consumer a scenario mentions after each of its steps.
"""

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

LATEST = "1.39"

# Fixed UUIDs, by the name a report shows.
PROVIDERS: dict[str, str] = {
    name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"placement-differential/provider/{name}"))
    for name in ("cn1", "cn2", "numa0", "numa1", "pf0", "pf1", "shared", "missing")
}
CONSUMERS: dict[str, str] = {
    name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"placement-differential/consumer/{name}"))
    for name in ("instance1", "instance2", "migration1")
}
AGGREGATES: dict[str, str] = {
    name: str(uuid.uuid5(uuid.NAMESPACE_URL, f"placement-differential/aggregate/{name}"))
    for name in ("agg1", "agg2", "agg3")
}

CN1, CN2 = PROVIDERS["cn1"], PROVIDERS["cn2"]
NUMA0, NUMA1 = PROVIDERS["numa0"], PROVIDERS["numa1"]
PF0, PF1 = PROVIDERS["pf0"], PROVIDERS["pf1"]
SHARED = PROVIDERS["shared"]
# Never created: the provider a request names that does not exist.
MISSING = PROVIDERS["missing"]
INSTANCE1, INSTANCE2 = CONSUMERS["instance1"], CONSUMERS["instance2"]
MIGRATION1 = CONSUMERS["migration1"]
AGG1, AGG2, AGG3 = AGGREGATES["agg1"], AGGREGATES["agg2"], AGGREGATES["agg3"]
PROJECT, USER = "project-a", "user-a"

NAMES = {value: name for name, value in (PROVIDERS | CONSUMERS | AGGREGATES).items()}


class _Absent:
    """The marker for a step without a body."""

    def __repr__(self) -> str:
        return "NO_BODY"


NO_BODY: Any = _Absent()
# In a ref's path: the element of a list that sorts first by its canonical JSON.
# Lists the API does not order (allocation requests) are picked the same way on both sides.
SORTED_FIRST = "<sorted-first>"


@dataclass(frozen=True)
class Ref:
    """A value of an earlier step's answer on the same side.

    ``path`` walks the JSON body (keys and list indexes, or ``SORTED_FIRST``);
    with ``header`` set it names a response header instead, and ``strip_host``
    keeps only the path of a URL (a ``Location``)."""

    step: str
    path: tuple[str | int, ...] = ()
    header: str | None = None
    strip_host: bool = False


@dataclass(frozen=True)
class Generation:
    """A provider's generation as read back on this side after the last step."""

    provider: str


@dataclass(frozen=True)
class ConsumerGeneration:
    """A consumer's generation as read back on this side (None for a new consumer)."""

    consumer: str


@dataclass(frozen=True)
class Merged:
    """An object: ``base`` (usually a Ref) with ``extra``'s keys set and ``drop``'s removed."""

    base: Any
    extra: Mapping[str, Any] = field(default_factory=dict)
    drop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Joined:
    """A string joined from parts, some of them references (a path with a created uuid)."""

    parts: tuple[Any, ...]


@dataclass(frozen=True)
class Step:
    method: str
    path: str | Joined | Ref
    # None sends no OpenStack-API-Version header (the service's default, 1.0).
    version: str | None
    body: Any = NO_BODY
    # A body sent verbatim (malformed JSON, a wrong content type); excludes ``body``.
    raw: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # The name later steps use to refer to this step's answer.
    label: str = ""

    def labelled(self, label: str) -> "Step":
        return replace(self, label=label)

    def describe(self) -> str:
        version = self.version or "(no version header)"
        label = f" [{self.label}]" if self.label else ""
        return f"{self.method} {_shown(self.path)} @ {version}{label}"


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]
    about: str = ""


def _shown(path: "str | Joined | Ref") -> str:
    """A path for reports: references as ``{step.field}``."""
    if isinstance(path, Ref):
        return (
            "{"
            + ".".join(
                [path.step, *(str(key) for key in path.path)]
                + ([path.header] if path.header else [])
            )
            + "}"
        )
    if isinstance(path, Joined):
        return "".join(part if isinstance(part, str) else _shown(part) for part in path.parts)
    return path


def ref(step: str, *path: str | int) -> Ref:
    return Ref(step, tuple(path))


def header(step: str, name: str, strip_host: bool = True) -> Ref:
    return Ref(step, header=name, strip_host=strip_host)


def joined(*parts: Any) -> Joined:
    return Joined(tuple(parts))


def scenario(name: str, *steps: Step | tuple[Step, ...], about: str = "") -> Scenario:
    """A scenario from steps and tuples of steps (what the builders return)."""
    flat: list[Step] = []
    for item in steps:
        flat.extend(item if isinstance(item, tuple) else (item,))
    labels = [step.label for step in flat if step.label]
    if len(labels) != len(set(labels)):
        raise ValueError(f"scenario {name}: step labels repeat: {labels}")
    return Scenario(name=name, steps=tuple(flat), about=about)


def get(path: str | Joined, version: str | None = LATEST, **kwargs: Any) -> Step:
    return Step("GET", path, version, **kwargs)


def put(path: str | Joined, version: str | None = LATEST, body: Any = NO_BODY, **kwargs) -> Step:
    return Step("PUT", path, version, body=body, **kwargs)


def post(path: str | Joined, version: str | None = LATEST, body: Any = NO_BODY, **kwargs) -> Step:
    return Step("POST", path, version, body=body, **kwargs)


def delete(path: str | Joined, version: str | None = LATEST, **kwargs: Any) -> Step:
    return Step("DELETE", path, version, **kwargs)


def version_at_least(version: str | None, minimum: str) -> bool:
    return _parse(version or "1.0") >= _parse(minimum)


def _parse(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)
