"""Upstream's JSON Schemas of query strings: what each accepts, and how its validator
words the first refusal.

``QuerySchema`` is one schema (its parameters' checks, its keys' patterns);
``validate_at`` validates a query string against the schema of a microversion and
names the microversion that would take a key it refuses. The grammar of the values
themselves is ``placement.query``'s.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field

import microversion_parse
from microversion_parse import Version

from placement import errors, microversion
from placement.query import INVALID_QUERY, parse_dashed_uuid

# A check of one value: the sentence and the JSON Schema keyword of its violation, or None.
Check = Callable[[str], tuple[str, str] | None]


def length(minimum: int, maximum: int) -> Check:
    def check(value: str) -> tuple[str, str] | None:
        if len(value) < minimum:
            too_short = "should be non-empty" if minimum == 1 else "is too short"
            return f"{value!r} {too_short}", "minLength"
        if len(value) > maximum:
            return f"{value!r} is too long", "maxLength"
        return None

    return check


def pattern(regex: str) -> Check:
    """Searched as JSON Schema does (``$`` also matches before a final newline)."""
    compiled = re.compile(regex)

    def check(value: str) -> tuple[str, str] | None:
        if compiled.search(value):
            return None
        return f"{value!r} does not match {regex!r}", "pattern"

    return check


def one_of(*choices: str) -> Check:
    def check(value: str) -> tuple[str, str] | None:
        if value in choices:
            return None
        return f"{value!r} is not one of {list(choices)!r}", "enum"

    return check


def uuid_format(value: str) -> tuple[str, str] | None:
    """JSON Schema's ``format: uuid``: 8-4-4-4-12 (see ``parse_dashed_uuid``)."""
    if parse_dashed_uuid(value) is None:
        return f"{value!r} is not a 'uuid'", "format"
    return None


@dataclass(frozen=True)
class QuerySchema:
    """What one of upstream's JSON Schemas of a query string accepts, and how its
    validator words the first refusal (jsonschema's ``best_match``): a missing
    required parameter, then the keys it does not know, then the values (of the
    parameter whose name sorts last, the first of its checks that fails).

    ``patterns`` are upstream's regexes for the keys with a suffix
    (``^resources([1-9][0-9]*)?$``), written as its message quotes them; a key is
    matched against the whole of each (a final newline is no part of a key here).
    """

    checks: dict[str, tuple[Check, ...]] = field(default_factory=dict)
    patterns: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    unknown_key_code: str = errors.DEFAULT
    # This service's own keys with a suffix: taken as ``patterns`` are, never quoted in
    # a refusal (which stays upstream's, word for word).
    extension_patterns: tuple[str, ...] = ()

    def validate(
        self, params: dict[str, list[str]], newer: Callable[[str], str | None] | None = None
    ) -> None:
        """400 for the first violation in ``params`` (each parameter's last value).
        ``newer`` names the microversion that takes a key this schema does not (see
        ``validate_at``)."""
        for name in self.required:
            if name not in params:
                raise _violation(
                    f"{name!r} is a required property",
                    "required",
                    None,
                    errors.QUERYPARAM_MISSING_VALUE,
                )
        self._refuse_unknown_keys(params, newer)
        for name in sorted(params, reverse=True):
            for check in self.checks.get(name, ()):
                found = check(params[name][-1])
                if found is not None:
                    raise _violation(*found, name, errors.QUERYPARAM_BAD_VALUE)

    def takes_key(self, key: str) -> bool:
        return key in self.checks or any(
            re.fullmatch(p.removeprefix("^").removesuffix("$"), key)
            for p in self.patterns + self.extension_patterns
        )

    def _refuse_unknown_keys(
        self, params: dict[str, list[str]], newer: Callable[[str], str | None] | None
    ) -> None:
        unknown = sorted(key for key in params if not self.takes_key(key))
        if not unknown:
            return
        named = ", ".join(repr(key) for key in unknown)
        if self.patterns:
            verb = "does" if len(unknown) == 1 else "do"
            regexes = ", ".join(repr(p) for p in sorted(self.patterns))
            sentence = f"{named} {verb} not match any of the regexes: {regexes}"
        else:
            verb = "was" if len(unknown) == 1 else "were"
            sentence = f"Additional properties are not allowed ({named} {verb} unexpected)"
        error = _violation(sentence, "additionalProperties", None, self.unknown_key_code)
        # Upstream's sentence, then the microversion that takes each key: a client that
        # forgot the version header otherwise learns only that the key was unexpected.
        needed = [(key, newer(key)) for key in unknown] if newer is not None else []
        hints = [
            f"{key!r} needs microversion {version} or later "
            f"(OpenStack-API-Version: placement {version}, or latest)."
            for key, version in needed
            if version is not None
        ]
        if hints:
            error.detail = "\n\n".join([error.detail, *hints])
        raise error


def _violation(sentence: str, keyword: str, name: str | None, code: str) -> errors.BadRequest:
    where = f"['properties'][{name!r}]" if name is not None else ""
    return errors.BadRequest(
        f"{INVALID_QUERY}{sentence}\n\nFailed validating {keyword!r} in schema{where}",
        code=code,
    )


def validate_at(
    schema_at: Callable[[Version], QuerySchema], version: Version, params: dict[str, list[str]]
) -> None:
    """``schema_at(version)`` validates ``params``; a key it refuses that a later
    microversion's schema takes is named with the first such version."""

    def first_version_taking(key: str) -> str | None:
        for text in microversion.VERSIONS:
            later = microversion_parse.parse_version_string(text)
            if later > version and schema_at(later).takes_key(key):
                return text
        return None

    schema_at(version).validate(params, newer=first_version_taking)
