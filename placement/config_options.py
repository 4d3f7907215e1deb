"""Every configuration option: its field in ``Config``, its file section and key, its
environment variable, its parser and its help (the sample configuration is written from
them: ``config.render_sample``).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

AUTH_STRATEGIES = ("noauth2", "keystone", "token")
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parse_list(text: str) -> tuple[str, ...]:
    """``a, b`` -> ("a", "b")."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _parse_mapping(text: str) -> dict[str, str]:
    """``a:B, c:D`` -> {"a": "B", "c": "D"}."""
    mapping = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition(":")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"expected name:VALUE pairs separated by commas, got {item!r}")
        mapping[name.strip()] = value.strip()
    return mapping


@dataclass(frozen=True)
class Option:
    """One configuration option as the file, the environment and the docs see it."""

    field: str
    section: str
    key: str
    env: str
    parse: Callable[[str], Any]
    help: str


OPTIONS: tuple[Option, ...] = (
    Option(
        "database_url",
        "placement_database",
        "connection",
        "PLACEMENT_DATABASE_URL",
        str,
        "SQLAlchemy URL of the database: SQLite (the default, a file created on first "
        "run), PostgreSQL (postgresql+psycopg://user:pass@host/placement) or MySQL/MariaDB "
        "(mysql+pymysql://user:pass@host/placement?charset=utf8; the service always speaks "
        "utf8mb4). Upstream Placement's section and key; [database] connection is read too.",
    ),
    Option(
        "database_max_pool_size",
        "placement_database",
        "max_pool_size",
        "PLACEMENT_DATABASE_MAX_POOL_SIZE",
        int,
        "Connections each worker keeps open to PostgreSQL or MySQL (0: no limit).",
    ),
    Option(
        "database_max_overflow",
        "placement_database",
        "max_overflow",
        "PLACEMENT_DATABASE_MAX_OVERFLOW",
        int,
        "Connections a worker may open beyond max_pool_size at busy times.",
    ),
    Option(
        "database_connection_recycle_time",
        "placement_database",
        "connection_recycle_time",
        "PLACEMENT_DATABASE_CONNECTION_RECYCLE_TIME",
        int,
        "Seconds after which a pooled connection is replaced (MySQL closes connections "
        "idle for wait_timeout; proxies often sooner).",
    ),
    Option(
        "database_max_retries",
        "placement_database",
        "max_retries",
        "PLACEMENT_DATABASE_MAX_RETRIES",
        int,
        "Attempts to reach the database when the service starts before it gives up "
        "(-1: try forever).",
    ),
    Option(
        "database_retry_interval",
        "placement_database",
        "retry_interval",
        "PLACEMENT_DATABASE_RETRY_INTERVAL",
        int,
        "Seconds between those attempts.",
    ),
    Option(
        "database_mysql_sql_mode",
        "placement_database",
        "mysql_sql_mode",
        "PLACEMENT_DATABASE_MYSQL_SQL_MODE",
        str,
        "The sql_mode of MySQL connections (empty: the server's own). The default is "
        "strict: a value that does not fit is an error, never truncated.",
    ),
    Option(
        "auth_strategy",
        "api",
        "auth_strategy",
        "PLACEMENT_AUTH_STRATEGY",
        str,
        "noauth2: development mode; the token 'admin' is an admin, any other token is a "
        "user whose roles come from the X-Roles header. keystone: Keystone tokens, checked "
        "by keystonemiddleware's auth_token, configured by the [keystone_authtoken] section "
        "of this file as upstream Placement's is. token: bearer tokens listed in "
        "tokens_file map to roles (admin, service, reader).",
    ),
    Option(
        "policy_file",
        "oslo_policy",
        "policy_file",
        "PLACEMENT_POLICY_FILE",
        str,
        "A policy file in oslo.policy's format (YAML) overriding any rule's default; an "
        "upstream Placement policy file works unchanged. Read again when it changes. "
        "'placement policy-sample' writes every rule with its default.",
    ),
    Option(
        "enforce_new_defaults",
        "oslo_policy",
        "enforce_new_defaults",
        "PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS",
        _parse_bool,
        "false: the rules' defaults also let an admin do what the new defaults keep for "
        "the service role (POST /reshaper) and for project readers (GET /usages), as "
        "before them. true: only the new defaults (upstream's own default).",
    ),
    Option(
        "tokens_file",
        "api",
        "tokens_file",
        "PLACEMENT_TOKENS_FILE",
        str,
        "With auth_strategy = token: a file of lines '<role> <token>' (roles: admin, "
        "service, reader). Blank lines and lines starting with # are ignored.",
    ),
    Option(
        "bind_host",
        "api",
        "bind_host",
        "PLACEMENT_BIND_HOST",
        str,
        "Address 'placement serve' listens on.",
    ),
    Option(
        "bind_port",
        "api",
        "bind_port",
        "PLACEMENT_BIND_PORT",
        int,
        "Port 'placement serve' listens on.",
    ),
    Option(
        "workers",
        "api",
        "workers",
        "PLACEMENT_WORKERS",
        int,
        "Number of gunicorn worker processes started by 'placement serve'.",
    ),
    Option(
        "threads",
        "api",
        "threads",
        "PLACEMENT_THREADS",
        int,
        "Threads of each worker of 'placement serve' (1 or more): connections a worker "
        "reads and answers at once. A client slow to send its request holds one thread, "
        "never the worker; the application itself runs one request at a time per worker.",
    ),
    Option(
        "client_timeout_seconds",
        "api",
        "client_timeout_seconds",
        "PLACEMENT_CLIENT_TIMEOUT_SECONDS",
        float,
        "Seconds 'placement serve' waits on a silent client (sending its request or "
        "reading the answer) before it closes the connection (more than 0).",
    ),
    Option(
        "allow_noauth_on_public_address",
        "api",
        "allow_noauth_on_public_address",
        "PLACEMENT_ALLOW_NOAUTH_ON_PUBLIC_ADDRESS",
        _parse_bool,
        "With auth_strategy = noauth2 'placement serve' refuses to listen on an address "
        "other than loopback, and the application (under any WSGI server) answers 403 to "
        "clients not on loopback, unless this is true.",
    ),
    Option(
        "max_request_body_mib",
        "api",
        "max_request_body_mib",
        "PLACEMENT_MAX_REQUEST_BODY_MIB",
        int,
        "Largest request body accepted, in MiB (1 or more); a longer one is answered 413 "
        "before it is read. The largest bodies real clients send (allocations of many "
        "consumers, reshapes of big trees) stay well below the default.",
    ),
    Option(
        "preload_providers",
        "placement",
        "preload_providers",
        "PLACEMENT_PRELOAD_PROVIDERS",
        _parse_bool,
        "Read the copy of the providers that the searches use once per host, in gunicorn's "
        "master process before it starts the workers (gunicorn's preload_app, for "
        "'placement serve' and for gunicorn given -c "
        "python:placement.observability.gunicorn_hooks): the workers share its memory "
        "instead of each reading a copy of its own, and a worker started later (one that "
        "died, max_requests) begins from a copy brought up to date just before. The port "
        "opens at once; the first answers wait until the copy is read. false: each worker "
        "reads its own copy on its first request.",
    ),
    Option(
        "randomize_allocation_candidates",
        "placement",
        "randomize_allocation_candidates",
        "PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES",
        _parse_bool,
        "Visit provider trees in random order and shuffle the answer, so that concurrent "
        "schedulers asking with 'limit' spread over providers.",
    ),
    Option(
        "max_allocation_candidates",
        "placement",
        "max_allocation_candidates",
        "PLACEMENT_MAX_ALLOCATION_CANDIDATES",
        int,
        "Upper bound on the number of allocation candidates in one answer, with or without "
        "'limit' (-1: no bound; else 1 or more). Identical isolated request groups on wide "
        "trees have millions of candidates; the answer is spread over trees round-robin.",
    ),
    Option(
        "allocation_candidates_budget_ms",
        "placement",
        "allocation_candidates_budget_ms",
        "PLACEMENT_ALLOCATION_CANDIDATES_BUDGET_MS",
        int,
        "Time budget of a GET /allocation_candidates search, in milliseconds, for a "
        "request without budget_ms (0: none). When it runs out the answer is the "
        "candidates found so far, valid each, and says it was cut (the "
        "Placement-Search-Cut header).",
    ),
    Option(
        "allocation_candidates_cache_mib",
        "placement",
        "allocation_candidates_cache_mib",
        "PLACEMENT_ALLOCATION_CANDIDATES_CACHE_MIB",
        int,
        "Each worker keeps each tree's allocation candidates for the requests asked lately, "
        "dropped whenever the tree changes, so that a repeated request searches only the "
        "trees written since (and the last body of each, until a provider changes): "
        "about this many MiB per worker (0: keep none).",
    ),
    Option(
        "group_resource_classes",
        "group_resources",
        "standard_classes",
        "PLACEMENT_GROUP_RESOURCE_CLASSES",
        _parse_mapping,
        "Group-resource translator: node-level resource names and the standard classes "
        "they become, as name:CLASS pairs. Other names become CUSTOM_<NAME>.",
    ),
    Option(
        "group_resource_byte_units",
        "group_resources",
        "byte_units",
        "PLACEMENT_GROUP_RESOURCE_BYTE_UNITS",
        _parse_mapping,
        "Group-resource translator: resource names whose amounts are bytes, and the unit "
        "(MB or GB, binary) their class counts in, as name:UNIT pairs.",
    ),
    Option(
        "group_flat_requests",
        "group_resources",
        "flat_requests",
        "PLACEMENT_GROUP_RESOURCE_FLAT_REQUESTS",
        str,
        "Group-resource translator, for requests that do not say (options.flat_requests): "
        "anywhere: a request whose groups hold no subgroups places each on any group of its "
        "level anywhere on the node. fill_levels: the levels it skips are filled in per "
        "group, as for a request with subgroups: each group gets its own group at every "
        "level above it.",
    ),
    Option(
        "group_node_ranking",
        "group_resources",
        "node_ranking",
        "PLACEMENT_GROUP_RESOURCE_NODE_RANKING",
        str,
        "Group-resource translator, for requests that do not say (options.node_ranking): "
        "mean: nodes rank by the mean over their inventories of the per-inventory score. "
        "sum: by the sum (as KubeGPU's group allocator ranks them), so that a node with more "
        "inventories scores more.",
    ),
    Option(
        "group_sibling_groups",
        "group_resources",
        "sibling_groups",
        "PLACEMENT_GROUP_RESOURCE_SIBLING_GROUPS",
        str,
        "Group-resource translator, for requests that do not say (options.sibling_groups): "
        "distinct: two request groups never share a group of the node. shared: they may "
        "when its inventories hold both, as KubeGPU's allocator lets them.",
    ),
    Option(
        "group_candidates_budget_ms",
        "group_resources",
        "candidates_budget_ms",
        "PLACEMENT_GROUP_RESOURCE_CANDIDATES_BUDGET_MS",
        int,
        "Time budget, in milliseconds, of a translator or device search (candidates and "
        "claims: /group_resources/candidates, /claims, /device_candidates, "
        "/device_claims) for a request without budget_ms (0: none; at most 9999999). "
        "When it runs out the answer is the best found so far, valid each, and says it "
        "was cut (the cut field and the Placement-Search-Cut header).",
    ),
    Option(
        "log_level",
        "logging",
        "level",
        "PLACEMENT_LOG_LEVEL",
        str,
        "Logging level: DEBUG, INFO (one line per request), WARNING or ERROR.",
    ),
    Option(
        "log_format",
        "logging",
        "format",
        "PLACEMENT_LOG_FORMAT",
        str,
        "text: one human-readable line per record; json: one JSON object per line "
        "(timestamp, level, logger, message, and each request's fields).",
    ),
    Option(
        "metrics_unauthenticated",
        "metrics",
        "unauthenticated",
        "PLACEMENT_METRICS_UNAUTHENTICATED",
        _parse_bool,
        "GET /metrics (Prometheus) without a token. When false, it asks for a token "
        "that policy allows to read the metrics, as the API does.",
    ),
    Option(
        "k8s_scheduler_prefix",
        "k8s",
        "scheduler_prefix",
        "PLACEMENT_K8S_SCHEDULER_PREFIX",
        str,
        "URL path under which kube-scheduler's extender verbs are answered (its "
        "urlPrefix's path): <prefix>/filter, /prioritize, /sort, /bind, /preempt.",
    ),
    Option(
        "k8s_scheduler_clients",
        "k8s",
        "scheduler_clients",
        "PLACEMENT_K8S_SCHEDULER_CLIENTS",
        _parse_list,
        "Addresses (CIDR) whose requests to the extender verbs are admitted without a "
        "token, as kube-scheduler sends none: loopback by default (the scheduler's pod "
        "runs this service beside it), or the TLS proxy that checks the scheduler's "
        "client certificate; empty: none. Other clients need a token that policy allows. "
        "No other route is opened. A reverse proxy on this host is a loopback client too: "
        "do not let it forward these paths.",
    ),
    Option(
        "k8s_kubeconfig",
        "k8s",
        "kubeconfig",
        "PLACEMENT_K8S_KUBECONFIG",
        str,
        "kubeconfig file for the Kubernetes API (bind, reconcile); empty: the pod's "
        "in-cluster service account.",
    ),
    Option(
        "k8s_api_timeout_seconds",
        "k8s",
        "api_timeout_seconds",
        "PLACEMENT_K8S_API_TIMEOUT_SECONDS",
        float,
        "Timeout of each call to the Kubernetes API.",
    ),
    Option(
        "k8s_topology_annotation_prefix",
        "k8s",
        "topology_annotation_prefix",
        "PLACEMENT_K8S_TOPOLOGY_ANNOTATION_PREFIX",
        str,
        "Prefix of the node annotations that give a node's GPU topology, one per GPU "
        "pair (<prefix><LINK>_<GPU>_<GPU>, e.g. NV2_0_1) and <prefix>memory (each GPU's "
        "memory, e.g. 80Gi); read when kube-scheduler sends whole nodes.",
    ),
    Option(
        "k8s_gang_required_level",
        "k8s",
        "gang_required_level",
        "PLACEMENT_K8S_GANG_REQUIRED_LEVEL",
        str,
        "The network level every pod of a pod group must share one domain of (the gang's "
        "required level); empty: the network's broadest level. A PodGroup's annotation "
        "<topology_annotation_prefix>gang-required-level overrides it for its group.",
    ),
    Option(
        "k8s_gang_preferred_level",
        "k8s",
        "gang_preferred_level",
        "PLACEMENT_K8S_GANG_PREFERRED_LEVEL",
        str,
        "The network level whose domains a pod group's gang should use as few of as can "
        "be; empty: none. A PodGroup's annotation "
        "<topology_annotation_prefix>gang-preferred-level overrides it.",
    ),
    Option(
        "k8s_gang_share_nodes",
        "k8s",
        "gang_share_nodes",
        "PLACEMENT_K8S_GANG_SHARE_NODES",
        _parse_bool,
        "Whether pods of one pod group may be reserved on one node; a PodGroup's "
        "annotation <topology_annotation_prefix>gang-share-nodes (true/false) overrides it.",
    ),
    Option(
        "k8s_gang_reservation_timeout",
        "k8s",
        "gang_reservation_timeout",
        "PLACEMENT_K8S_GANG_RESERVATION_TIMEOUT",
        float,
        "Seconds a pod group's reserved gang waits for its pods: then the members no pod "
        "took are released (those pods took are kept).",
    ),
)
