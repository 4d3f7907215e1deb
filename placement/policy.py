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
from typing import Any

from oslo_config import cfg
from oslo_policy import generator
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy

from placement import errors
from placement.k8s import DEFAULT_SCHEDULER_PREFIX
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


def _api_rule(name: str, check: str, what: str, *operations: tuple[str, str]):
    return oslo_policy.DocumentedRuleDefault(
        name=f"placement:{name}",
        check_str=check,
        description=what,
        operations=[{"method": method, "path": path} for method, path in operations],
        scope_types=PROJECT,
    )


PROVIDER = "/resource_providers/{uuid}"
INVENTORY = PROVIDER + "/inventories/{resource_class}"
GROUP_NODE = "/group_resources/nodes/{name}"
DEVICE_NODE = "/group_resources/device_nodes/{name}"
NETWORK = "/group_resources/network"
GANG = "/group_resources/gangs/{gang_uuid}"
# The extender verbs at the default [k8s] scheduler_prefix (``rule_of_extender_verb``
# finds them under any prefix).
SCHEDULER = DEFAULT_SCHEDULER_PREFIX

API_RULES = [
    _api_rule(
        "resource_providers:list", READ, "List resource providers.", ("GET", "/resource_providers")
    ),
    _api_rule(
        "resource_providers:create",
        ADMIN_OR_SERVICE,
        "Create a resource provider.",
        ("POST", "/resource_providers"),
    ),
    _api_rule("resource_providers:show", READ, "Show a resource provider.", ("GET", PROVIDER)),
    _api_rule(
        "resource_providers:update",
        ADMIN_OR_SERVICE,
        "Update a resource provider.",
        ("PUT", PROVIDER),
    ),
    _api_rule(
        "resource_providers:delete",
        ADMIN_OR_SERVICE,
        "Delete a resource provider.",
        ("DELETE", PROVIDER),
    ),
    _api_rule(
        "resource_classes:list", READ, "List resource classes.", ("GET", "/resource_classes")
    ),
    _api_rule(
        "resource_classes:create",
        ADMIN_OR_SERVICE,
        "Create a resource class.",
        ("POST", "/resource_classes"),
    ),
    _api_rule(
        "resource_classes:show", READ, "Show a resource class.", ("GET", "/resource_classes/{name}")
    ),
    _api_rule(
        "resource_classes:update",
        ADMIN_OR_SERVICE,
        "Create or rename a resource class.",
        ("PUT", "/resource_classes/{name}"),
    ),
    _api_rule(
        "resource_classes:delete",
        ADMIN_OR_SERVICE,
        "Delete a resource class.",
        ("DELETE", "/resource_classes/{name}"),
    ),
    _api_rule(
        "resource_providers:inventories:list",
        READ,
        "List a provider's inventories.",
        ("GET", PROVIDER + "/inventories"),
    ),
    _api_rule(
        "resource_providers:inventories:create",
        ADMIN_OR_SERVICE,
        "Add an inventory to a provider.",
        ("POST", PROVIDER + "/inventories"),
    ),
    _api_rule(
        "resource_providers:inventories:show",
        READ,
        "Show one inventory of a provider.",
        ("GET", INVENTORY),
    ),
    _api_rule(
        "resource_providers:inventories:update",
        ADMIN_OR_SERVICE,
        "Replace a provider's inventories, or update one.",
        ("PUT", PROVIDER + "/inventories"),
        ("PUT", INVENTORY),
    ),
    _api_rule(
        "resource_providers:inventories:delete",
        ADMIN_OR_SERVICE,
        "Delete a provider's inventories, or one.",
        ("DELETE", PROVIDER + "/inventories"),
        ("DELETE", INVENTORY),
    ),
    _api_rule(
        "resource_providers:aggregates:list",
        READ,
        "List a provider's aggregates.",
        ("GET", PROVIDER + "/aggregates"),
    ),
    _api_rule(
        "resource_providers:aggregates:update",
        ADMIN_OR_SERVICE,
        "Replace a provider's aggregates.",
        ("PUT", PROVIDER + "/aggregates"),
    ),
    _api_rule(
        "resource_providers:usages",
        READ,
        "Show a provider's usages.",
        ("GET", PROVIDER + "/usages"),
    ),
    _api_rule(
        "usages",
        f"{ADMIN_OR_PROJECT_READER_OR_SERVICE} or rule:reader_token_api",
        "Show a project's (or a project's user's) total usages.",
        ("GET", "/usages"),
    ),
    _api_rule("traits:list", READ, "List traits.", ("GET", "/traits")),
    _api_rule("traits:show", READ, "Show whether a trait exists.", ("GET", "/traits/{name}")),
    _api_rule(
        "traits:update", ADMIN_OR_SERVICE, "Create a custom trait.", ("PUT", "/traits/{name}")
    ),
    _api_rule(
        "traits:delete", ADMIN_OR_SERVICE, "Delete a custom trait.", ("DELETE", "/traits/{name}")
    ),
    _api_rule(
        "resource_providers:traits:list",
        READ,
        "List a provider's traits.",
        ("GET", PROVIDER + "/traits"),
    ),
    _api_rule(
        "resource_providers:traits:update",
        ADMIN_OR_SERVICE,
        "Replace a provider's traits.",
        ("PUT", PROVIDER + "/traits"),
    ),
    _api_rule(
        "resource_providers:traits:delete",
        ADMIN_OR_SERVICE,
        "Remove every trait of a provider.",
        ("DELETE", PROVIDER + "/traits"),
    ),
    _api_rule(
        "allocations:manage",
        ADMIN_OR_SERVICE,
        "Write the allocations of several consumers at once.",
        ("POST", "/allocations"),
    ),
    _api_rule(
        "allocations:list",
        READ,
        "Show a consumer's allocations.",
        ("GET", "/allocations/{consumer_uuid}"),
    ),
    _api_rule(
        "allocations:update",
        ADMIN_OR_SERVICE,
        "Replace a consumer's allocations.",
        ("PUT", "/allocations/{consumer_uuid}"),
    ),
    _api_rule(
        "allocations:delete",
        ADMIN_OR_SERVICE,
        "Delete a consumer's allocations.",
        ("DELETE", "/allocations/{consumer_uuid}"),
    ),
    _api_rule(
        "resource_providers:allocations:list",
        READ,
        "List the allocations against a provider.",
        ("GET", PROVIDER + "/allocations"),
    ),
    _api_rule(
        "allocation_candidates:list",
        READ,
        "List the allocation candidates for a request.",
        ("GET", "/allocation_candidates"),
    ),
    _api_rule(
        "allocation_candidates:explain",
        READ,
        "Explain what a request for allocation candidates finds (this service's).",
        ("GET", "/allocation_candidates/explain"),
    ),
    _api_rule(
        "reshaper:reshape",
        SERVICE,
        "Move inventories and allocations between providers in one step.",
        ("POST", "/reshaper"),
    ),
    # This service's own routes.
    _api_rule(
        "group_resources:nodes:list",
        READ,
        "List the translator's nodes.",
        ("GET", "/group_resources/nodes"),
    ),
    _api_rule(
        "group_resources:nodes:show",
        READ,
        "Show one of the translator's nodes.",
        ("GET", GROUP_NODE),
    ),
    _api_rule(
        "group_resources:nodes:update",
        ADMIN_OR_SERVICE,
        "Create or update a node from its group-resource keys.",
        ("PUT", GROUP_NODE),
    ),
    _api_rule(
        "group_resources:nodes:delete",
        ADMIN_OR_SERVICE,
        "Delete a translator's node.",
        ("DELETE", GROUP_NODE),
    ),
    _api_rule(
        "group_resources:queries:translate",
        ADMIN_OR_SERVICE,
        "Translate a group-resource request into an allocation candidates query.",
        ("POST", "/group_resources/queries"),
    ),
    _api_rule(
        "group_resources:candidates:list",
        ADMIN_OR_SERVICE,
        "Find candidates for a group-resource request.",
        ("POST", "/group_resources/candidates"),
    ),
    _api_rule(
        "group_resources:candidates:explain",
        ADMIN_OR_SERVICE,
        "Explain what a group-resource request for candidates finds.",
        ("POST", "/group_resources/candidates/explain"),
    ),
    _api_rule(
        "group_resources:claims:create",
        ADMIN_OR_SERVICE,
        "Claim the best candidate of a group-resource request.",
        ("POST", "/group_resources/claims"),
    ),
    _api_rule(
        "group_resources:device_nodes:list",
        READ,
        "List the device nodes.",
        ("GET", "/group_resources/device_nodes"),
    ),
    _api_rule(
        "group_resources:device_nodes:show", READ, "Show one device node.", ("GET", DEVICE_NODE)
    ),
    _api_rule(
        "group_resources:device_nodes:update",
        ADMIN_OR_SERVICE,
        "Import a node's device topology.",
        ("PUT", DEVICE_NODE),
    ),
    _api_rule(
        "group_resources:device_nodes:delete",
        ADMIN_OR_SERVICE,
        "Delete a device node.",
        ("DELETE", DEVICE_NODE),
    ),
    _api_rule(
        "group_resources:device_nodes:checkpoints:update",
        ADMIN_OR_SERVICE,
        "Hold the devices a node's kubelet checkpoint gives pods.",
        ("PUT", DEVICE_NODE + "/checkpoints"),
    ),
    _api_rule(
        "group_resources:device_nodes:koordinator_device:update",
        ADMIN_OR_SERVICE,
        "Import a node's Koordinator Device object (and hold its checkpoint).",
        ("PUT", DEVICE_NODE + "/koordinator_device"),
    ),
    _api_rule(
        "group_resources:device_candidates:list",
        ADMIN_OR_SERVICE,
        "Find devices for a request.",
        ("POST", "/group_resources/device_candidates"),
    ),
    _api_rule(
        "group_resources:device_candidates:explain",
        ADMIN_OR_SERVICE,
        "Explain what a request for devices finds.",
        ("POST", "/group_resources/device_candidates/explain"),
    ),
    _api_rule(
        "group_resources:device_claims:create",
        ADMIN_OR_SERVICE,
        "Claim the best devices for a request.",
        ("POST", "/group_resources/device_claims"),
    ),
    _api_rule(
        "group_resources:network:show",
        READ,
        "Show the network's levels and where each node sits.",
        ("GET", NETWORK),
        ("GET", NETWORK + "/nodes/{name}"),
    ),
    _api_rule(
        "group_resources:network:update",
        ADMIN_OR_SERVICE,
        "Describe the network's levels and where each node sits.",
        ("PUT", NETWORK),
        ("PUT", NETWORK + "/nodes/{name}"),
        ("DELETE", NETWORK + "/nodes/{name}"),
    ),
    _api_rule(
        "group_resources:gang_candidates:list",
        ADMIN_OR_SERVICE,
        "Find gangs of device requests in one network domain.",
        ("POST", "/group_resources/gang_candidates"),
    ),
    _api_rule(
        "group_resources:gang_candidates:explain",
        ADMIN_OR_SERVICE,
        "Explain what a request for gangs finds.",
        ("POST", "/group_resources/gang_candidates/explain"),
    ),
    _api_rule(
        "group_resources:gang_claims:create",
        ADMIN_OR_SERVICE,
        "Claim the best gang, all members or none.",
        ("POST", "/group_resources/gang_claims"),
    ),
    _api_rule(
        "group_resources:gangs:show", READ, "Show a gang's members and allocations.", ("GET", GANG)
    ),
    _api_rule(
        "group_resources:gangs:delete",
        ADMIN_OR_SERVICE,
        "Release a gang: every member's allocations.",
        ("DELETE", GANG),
    ),
    # kube-scheduler's extender verbs (prioritize also named sort).
    *(
        _api_rule(
            f"k8s:scheduler:{verb}",
            ADMIN_OR_SERVICE,
            f"kube-scheduler's {verb} verb, for a client not in [k8s] scheduler_clients.",
            *(("POST", f"{SCHEDULER}/{name}") for name in names),
        )
        for verb, names in (
            ("filter", ["filter"]),
            ("prioritize", ["prioritize", "sort"]),
            ("bind", ["bind"]),
            ("preempt", ["preempt"]),
        )
    ),
    _api_rule(
        "metrics:show",
        "rule:admin_api",
        "Read the Prometheus metrics (unless [metrics] unauthenticated opens them).",
        ("GET", "/metrics"),
    ),
]


def list_rules() -> list[oslo_policy.RuleDefault]:
    """Every rule and its default (the ``oslo.policy.policies`` entry point's)."""
    return BASE_RULES + API_RULES


def operation_path(route: str) -> str:
    """A route as the rules' operations write it: ``/traits/<name>`` -> ``/traits/{name}``."""
    return route.replace("<", "{").replace(">", "}")


class Policy:
    """This application's rules: the defaults, overridden by ``policy_file``."""

    def __init__(self, policy_file: str | None, enforce_new_defaults: bool) -> None:
        self._enforcer = _enforcer(policy_file, enforce_new_defaults)
        self._decisions = Decisions(self._enforcer)
        self._rule_of_operation = {
            (operation["method"], operation["path"]): rule.name
            for rule in API_RULES
            for operation in rule.operations
        }

    def rule_of(self, method: str, route: str) -> str | None:
        """The rule of ``method`` on ``route`` (a Flask route; HEAD is GET's)."""
        method = "GET" if method == "HEAD" else method
        return self._rule_of_operation.get((method, operation_path(route)))

    def rule_of_extender_verb(self, verb: str) -> str | None:
        """The rule of an extender verb (``/filter``), whatever the prefix it is under."""
        return self._rule_of_operation.get(("POST", SCHEDULER + verb))

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
