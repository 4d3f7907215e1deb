"""Who may do what: each route's policy rule, enforced with oslo.policy.

The rules of the Placement API carry upstream's names and defaults, so an
operator's existing ``policy.yaml`` for upstream Placement works here unchanged,
and ``oslopolicy-sample-generator --namespace placement`` (or ``placement
policy-sample``) writes them. The routes of this service's own features (the
group-resource translator, device topologies) have rules of their own under the
same prefix, admin or service by default.

Two settings choose the defaults, as upstream's: ``enforce_new_defaults``
false (this service's default, and that of upstream's own functional suite)
also lets an admin do what the new defaults keep for the service role
(``POST /reshaper``) and for project readers (``GET /usages`` of their
project); true applies the new defaults only. A ``policy_file`` overrides any
rule; it is read again when it changes. Each judgement is oslo.policy's, kept for the
next request that presents the same values to the same rule (``policy_decisions``).

One rule exists only for this service's ``token`` strategy: its reader tokens
read everything (``reader_token_api``, true only for the credentials such a
token gives). Keystone and noauth2 credentials never carry it, so for them every
read rule is upstream's.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement import errors
from placement.policy_decisions import Decisions

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
SERVICE = "rule:service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"
# A read: what admin or service may do, and the token strategy's readers.
READ = f"{ADMIN_OR_SERVICE} or rule:reader_token_api"
PROJECT = ["project"]

_LEGACY = oslo_policy.DeprecatedRule(
    name="rule:admin_api",
    check_str="role:admin",
    deprecated_reason=(
        "The placement rules have new defaults by role (admin, service, project reader); "
        "the old default let an admin do everything."
    ),
    deprecated_since="W",
)

BASE_RULES = [
    oslo_policy.RuleDefault(
        "admin_api",
        "role:admin",
        description="An administrator.",
        scope_types=PROJECT,
    ),
    oslo_policy.RuleDefault(
        "service_api",
        "role:service",
        description="Another service of the cloud.",
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "admin_or_service_api",
        "role:admin or role:service",
        description="An administrator or another service.",
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        description="A reader of the project the request is about.",
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "admin_or_project_reader_or_service_api",
        "role:admin or rule:project_reader_api or role:service",
        description="An administrator, another service, or a reader of the project.",
        scope_types=PROJECT,
        deprecated_rule=_LEGACY,
    ),
    oslo_policy.RuleDefault(
        "reader_token_api",
        "reads_everything:True",
        description=(
            "A reader token of this service's token strategy (tokens_file). No Keystone "
            "or noauth2 credentials match it."
        ),
    ),
]


@dataclass(frozen=True)
class Rule:
    """An API rule's default check, and what it allows."""

    check: str
    description: str


# The API's rules by name: each one's default and what it guards. The routes name their
# rule (``routes.API``); the operations each rule guards are derived from them.
API_RULES: dict[str, Rule] = {
    "placement:resource_providers:list": Rule(READ, "List resource providers."),
    "placement:resource_providers:create": Rule(ADMIN_OR_SERVICE, "Create a resource provider."),
    "placement:resource_providers:show": Rule(READ, "Show a resource provider."),
    "placement:resource_providers:update": Rule(ADMIN_OR_SERVICE, "Update a resource provider."),
    "placement:resource_providers:delete": Rule(ADMIN_OR_SERVICE, "Delete a resource provider."),
    "placement:resource_classes:list": Rule(READ, "List resource classes."),
    "placement:resource_classes:create": Rule(ADMIN_OR_SERVICE, "Create a resource class."),
    "placement:resource_classes:show": Rule(READ, "Show a resource class."),
    "placement:resource_classes:update": Rule(
        ADMIN_OR_SERVICE, "Create or rename a resource class."
    ),
    "placement:resource_classes:delete": Rule(ADMIN_OR_SERVICE, "Delete a resource class."),
    "placement:resource_providers:inventories:list": Rule(READ, "List a provider's inventories."),
    "placement:resource_providers:inventories:create": Rule(
        ADMIN_OR_SERVICE, "Add an inventory to a provider."
    ),
    "placement:resource_providers:inventories:show": Rule(
        READ, "Show one inventory of a provider."
    ),
    "placement:resource_providers:inventories:update": Rule(
        ADMIN_OR_SERVICE, "Replace a provider's inventories, or update one."
    ),
    "placement:resource_providers:inventories:delete": Rule(
        ADMIN_OR_SERVICE, "Delete a provider's inventories, or one."
    ),
    "placement:resource_providers:aggregates:list": Rule(READ, "List a provider's aggregates."),
    "placement:resource_providers:aggregates:update": Rule(
        ADMIN_OR_SERVICE, "Replace a provider's aggregates."
    ),
    "placement:resource_providers:usages": Rule(READ, "Show a provider's usages."),
    "placement:usages": Rule(
        f"{ADMIN_OR_PROJECT_READER_OR_SERVICE} or rule:reader_token_api",
        "Show a project's (or a project's user's) total usages.",
    ),
    "placement:traits:list": Rule(READ, "List traits."),
    "placement:traits:show": Rule(READ, "Show whether a trait exists."),
    "placement:traits:update": Rule(ADMIN_OR_SERVICE, "Create a custom trait."),
    "placement:traits:delete": Rule(ADMIN_OR_SERVICE, "Delete a custom trait."),
    "placement:resource_providers:traits:list": Rule(READ, "List a provider's traits."),
    "placement:resource_providers:traits:update": Rule(
        ADMIN_OR_SERVICE, "Replace a provider's traits."
    ),
    "placement:resource_providers:traits:delete": Rule(
        ADMIN_OR_SERVICE, "Remove every trait of a provider."
    ),
    "placement:allocations:manage": Rule(
        ADMIN_OR_SERVICE, "Write the allocations of several consumers at once."
    ),
    "placement:allocations:list": Rule(READ, "Show a consumer's allocations."),
    "placement:allocations:update": Rule(ADMIN_OR_SERVICE, "Replace a consumer's allocations."),
    "placement:allocations:delete": Rule(ADMIN_OR_SERVICE, "Delete a consumer's allocations."),
    "placement:resource_providers:allocations:list": Rule(
        READ, "List the allocations against a provider."
    ),
    "placement:allocation_candidates:list": Rule(
        READ, "List the allocation candidates for a request."
    ),
    "placement:allocation_candidates:explain": Rule(
        READ, "Explain what a request for allocation candidates finds (this service's)."
    ),
    "placement:reshaper:reshape": Rule(
        SERVICE, "Move inventories and allocations between providers in one step."
    ),
    "placement:group_resources:nodes:list": Rule(READ, "List the translator's nodes."),
    "placement:group_resources:nodes:show": Rule(READ, "Show one of the translator's nodes."),
    "placement:group_resources:nodes:update": Rule(
        ADMIN_OR_SERVICE, "Create or update a node from its group-resource keys."
    ),
    "placement:group_resources:nodes:delete": Rule(ADMIN_OR_SERVICE, "Delete a translator's node."),
    "placement:group_resources:queries:translate": Rule(
        ADMIN_OR_SERVICE, "Translate a group-resource request into an allocation candidates query."
    ),
    "placement:group_resources:candidates:list": Rule(
        ADMIN_OR_SERVICE, "Find candidates for a group-resource request."
    ),
    "placement:group_resources:candidates:explain": Rule(
        ADMIN_OR_SERVICE, "Explain what a group-resource request for candidates finds."
    ),
    "placement:group_resources:claims:create": Rule(
        ADMIN_OR_SERVICE, "Claim the best candidate of a group-resource request."
    ),
    "placement:group_resources:device_nodes:list": Rule(READ, "List the device nodes."),
    "placement:group_resources:device_nodes:show": Rule(READ, "Show one device node."),
    "placement:group_resources:device_nodes:update": Rule(
        ADMIN_OR_SERVICE, "Import a node's device topology."
    ),
    "placement:group_resources:device_nodes:delete": Rule(
        ADMIN_OR_SERVICE, "Delete a device node."
    ),
    "placement:group_resources:device_nodes:checkpoints:update": Rule(
        ADMIN_OR_SERVICE, "Hold the devices a node's kubelet checkpoint gives pods."
    ),
    "placement:group_resources:device_nodes:koordinator_device:update": Rule(
        ADMIN_OR_SERVICE, "Import a node's Koordinator Device object (and hold its checkpoint)."
    ),
    "placement:group_resources:device_candidates:list": Rule(
        ADMIN_OR_SERVICE, "Find devices for a request."
    ),
    "placement:group_resources:device_candidates:explain": Rule(
        ADMIN_OR_SERVICE, "Explain what a request for devices finds."
    ),
    "placement:group_resources:device_claims:create": Rule(
        ADMIN_OR_SERVICE, "Claim the best devices for a request."
    ),
    "placement:group_resources:network:show": Rule(
        READ, "Show the network's levels and where each node sits."
    ),
    "placement:group_resources:network:update": Rule(
        ADMIN_OR_SERVICE, "Describe the network's levels and where each node sits."
    ),
    "placement:group_resources:gang_candidates:list": Rule(
        ADMIN_OR_SERVICE, "Find gangs of device requests in one network domain."
    ),
    "placement:group_resources:gang_candidates:explain": Rule(
        ADMIN_OR_SERVICE, "Explain what a request for gangs finds."
    ),
    "placement:group_resources:gang_claims:create": Rule(
        ADMIN_OR_SERVICE, "Claim the best gang, all members or none."
    ),
    "placement:group_resources:gangs:show": Rule(READ, "Show a gang's members and allocations."),
    "placement:group_resources:gangs:delete": Rule(
        ADMIN_OR_SERVICE, "Release a gang: every member's allocations."
    ),
    "placement:k8s:scheduler:filter": Rule(
        ADMIN_OR_SERVICE,
        "kube-scheduler's filter verb, for a client not in [k8s] scheduler_clients.",
    ),
    "placement:k8s:scheduler:prioritize": Rule(
        ADMIN_OR_SERVICE,
        "kube-scheduler's prioritize verb, for a client not in [k8s] scheduler_clients.",
    ),
    "placement:k8s:scheduler:bind": Rule(
        ADMIN_OR_SERVICE,
        "kube-scheduler's bind verb, for a client not in [k8s] scheduler_clients.",
    ),
    "placement:k8s:scheduler:preempt": Rule(
        ADMIN_OR_SERVICE,
        "kube-scheduler's preempt verb, for a client not in [k8s] scheduler_clients.",
    ),
    "placement:metrics:show": Rule(
        "rule:admin_api",
        "Read the Prometheus metrics (unless [metrics] unauthenticated opens them).",
    ),
}


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every rule and its default, as the enforcer judges them (the operations each API
    rule guards are the routes' to say: ``routes.documented_rules``)."""
    return BASE_RULES + [
        oslo_policy.RuleDefault(name, rule.check, description=rule.description, scope_types=PROJECT)
        for name, rule in API_RULES.items()
    ]


def documented(
    operations: Mapping[str, list[oslo_policy.Operation]],
) -> list[oslo_policy.RuleDefault]:
    """The API rules documented with the operations each guards (``operations``: by rule
    name, each operation's method and path)."""
    return [
        oslo_policy.DocumentedRuleDefault(
            name=name,
            check_str=rule.check,
            description=rule.description,
            operations=operations[name],
            scope_types=PROJECT,
        )
        for name, rule in API_RULES.items()
    ]


class Policy:
    """This application's rules: the defaults, overridden by ``policy_file``."""

    def __init__(self, policy_file: str | None, enforce_new_defaults: bool) -> None:
        self._enforcer = _enforcer(policy_file, enforce_new_defaults)
        self._decisions = Decisions(self._enforcer)

    def authorize(self, rule: str, credentials: Mapping[str, Any], target: Mapping) -> None:
        """Raise Forbidden, in upstream's words, unless ``rule`` allows ``credentials``
        (oslo.policy's judgement, kept for the same values: ``policy_decisions``)."""
        if not self._decisions.allows(
            rule, credentials, target, lambda: self._judge(rule, credentials, target)
        ):
            raise errors.Forbidden(f"Policy does not allow {rule} to be performed.")

    def _judge(self, rule: str, credentials: Mapping[str, Any], target: Mapping) -> bool:
        try:
            return bool(self._enforcer.authorize(rule, dict(target), dict(credentials)))
        except oslo_policy.InvalidScope:
            return False


def sample_enforcer() -> oslo_policy.Enforcer:
    """The defaults (the ``oslo.policy.enforcer`` entry point's, for oslo.policy's tools)."""
    return _enforcer(None, enforce_new_defaults=False)


def write_sample(output_file: str | None = None) -> None:
    """Write every rule with its default and description, in oslo.policy's YAML (to
    standard output without ``output_file``)."""
    arguments = ["--namespace", "placement"]
    if output_file is not None:
        arguments += ["--output-file", output_file]
    generator.generate_sample(args=arguments, conf=cfg.ConfigOpts())


def _enforcer(policy_file: str | None, enforce_new_defaults: bool) -> oslo_policy.Enforcer:
    conf = cfg.ConfigOpts()
    policy_opts.set_defaults(conf)
    conf([], project="placement", default_config_files=[], default_config_dirs=[])
    conf.set_override("enforce_new_defaults", enforce_new_defaults, group="oslo_policy")
    conf.set_override("policy_dirs", [], group="oslo_policy")
    if policy_file is not None and not os.path.isfile(policy_file):
        raise ValueError(f"policy_file {policy_file} does not exist")
    # No file named: an empty one (the enforcer applies the defaults only with one; it
    # would otherwise look for a policy.yaml in /etc/placement and other places).
    conf.set_override(
        "policy_file", os.path.abspath(policy_file or os.devnull), group="oslo_policy"
    )
    enforcer = oslo_policy.Enforcer(conf)
    # Messages for operators about deprecated defaults: the settings' business.
    enforcer.suppress_deprecation_warnings = True
    enforcer.suppress_default_change_warnings = True
    enforcer.register_defaults(list_rules())
    enforcer.load_rules()
    return enforcer
