"""Scenarios that differ from upstream today, and why: strict in both directions.

A scenario listed here must still differ, first at the step named (its label, or
"step N"); one that no longer differs fails with "remove it from the list", so the
list shrinks as fixes land. ``allowed`` marks differences api-ref/differences.md
documents as deliberate and the rule permits (upstream leaves state behind after a
failed request; upstream's generic error code where we give the specific one);
they stay.
"""

from dataclasses import dataclass

BACKENDS = frozenset({"sqlite", "postgresql", "mysql"})


@dataclass(frozen=True)
class Known:
    step: str
    reason: str
    allowed: bool = False
    backends: frozenset[str] = BACKENDS


# Requests naming a provider that does not exist (scenarios/errors.py, _missing_requests).
MISSING_PROVIDER_REQUESTS = (
    "show",
    "update",
    "delete",
    "inventories",
    "set-inventories",
    "create-inventory",
    "delete-inventories",
    "inventory",
    "set-inventory",
    "delete-inventory",
    "usages",
    "aggregates",
    "set-aggregates",
    "traits",
    "set-traits",
    "delete-traits",
    "allocations",
)

# Malformed or too-early query parameters, where upstream answers the generic code.
SPECIFIC_QUERY_CODES = {
    "too-early-rp-forbidden-aggregate-1.31": "placement.query.bad_value",
    "too-early-rp-any-traits-1.38": "placement.query.bad_value",
    "too-early-ac-granular-1.24": "placement.query.bad_value",
    "too-early-ac-in-tree-1.30": "placement.query.bad_value",
    "too-early-ac-suffix-1.32": "placement.query.bad_value",
    "too-early-ac-root-required-1.34": "placement.query.bad_value",
    "too-early-ac-same-subtree-1.35": "placement.query.bad_value",
    "too-early-ac-no-resources-1.34": "placement.query.missing_value",
    "bad-candidates-bad-resources": "placement.query.bad_value",
    "bad-candidates-zero-amount": "placement.query.bad_value",
    "bad-candidates-bad-member-of": "placement.query.bad_value",
    "bad-candidates-bad-in-tree": "placement.query.bad_value",
    "bad-candidates-no-group-policy": "placement.query.missing_value",
    "bad-candidates-bad-group-policy": "placement.query.bad_value",
    "bad-candidates-bad-limit": "placement.query.bad_value",
    "bad-candidates-unknown-parameter": "placement.query.bad_value",
}

EXPECTED: dict[str, Known] = {
    **{
        f"missing-{name}-1.39": Known(
            name,
            "404 for a provider in the URL: upstream placement.undefined_code, here "
            "placement.resource_provider.not_found (documented)",
            allowed=True,
        )
        for name in MISSING_PROVIDER_REQUESTS
    },
    **{
        name: Known(
            name.removeprefix("too-early-").removeprefix("bad-candidates-"),
            f"400 for a malformed query: upstream placement.undefined_code, here {code} "
            "(documented)",
            allowed=True,
        )
        for name, code in SPECIFIC_QUERY_CODES.items()
    },
    "missing-provider-allocation-1.39": Known(
        "retry",
        "upstream leaves an empty consumer behind after the failed write, so its retry "
        "with a null generation is 409; here 204 (documented)",
        allowed=True,
    ),
}
