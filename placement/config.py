"""Configuration: the ``Config`` every option fills, and how it is read.

The options themselves (file key, environment variable, parser, help) are
``config_options.OPTIONS``. Values come from defaults, then the INI configuration
file, then environment variables (which win). The resulting ``Config`` is passed down from
``create_app(config)``; nothing deeper reads the environment.
"""

import configparser
import dataclasses
import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placement.config_options import (
    AUTH_STRATEGIES,
    LOG_FORMATS,
    LOG_LEVELS,
    OPTIONS,
    Option,
)
from placement.db.options import DatabaseOptions
from placement.k8s import DEFAULT_SCHEDULER_PREFIX, DEFAULT_TOPOLOGY_PREFIX
from placement.nodes.group_options import CHOICES, GroupOptions
from placement.nodes.naming import (
    DEFAULT_BYTE_UNITS,
    DEFAULT_STANDARD_CLASSES,
    Naming,
    lookup_ignoring_case,
    unit_of_class,
)
from placement.nodes.search_budget import MAX_BUDGET_MS

DEFAULT_CONFIG_FILE = "/etc/placement/placement.conf"
CONFIG_FILE_NAME = "placement.conf"
UPSTREAM_CONFIG_DIR_VARIABLE = "OS_PLACEMENT_CONFIG_DIR"
DEFAULT_DATABASE_URL = "sqlite:///placement.sqlite"


@dataclass(frozen=True)
class Config:
    """The service's whole configuration; see ``OPTIONS`` for each field."""

    database_url: str = DEFAULT_DATABASE_URL
    database_max_pool_size: int = DatabaseOptions.max_pool_size
    database_max_overflow: int = DatabaseOptions.max_overflow
    database_connection_recycle_time: int = DatabaseOptions.connection_recycle_time
    database_max_retries: int = DatabaseOptions.max_retries
    database_retry_interval: int = DatabaseOptions.retry_interval
    database_mysql_sql_mode: str = DatabaseOptions.mysql_sql_mode
    auth_strategy: str = "noauth2"
    tokens_file: str | None = None
    policy_file: str | None = None
    enforce_new_defaults: bool = False
    bind_host: str = "127.0.0.1"
    bind_port: int = 8780
    workers: int = 2
    threads: int = 8
    preload_providers: bool = True
    client_timeout_seconds: float = 10.0
    allow_noauth_on_public_address: bool = False
    max_request_body_mib: int = 10
    randomize_allocation_candidates: bool = False
    max_allocation_candidates: int = 10000
    allocation_candidates_cache_mib: int = 64
    allocation_candidates_budget_ms: int = 0
    group_resource_classes: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_STANDARD_CLASSES)
    )
    group_resource_byte_units: Mapping[str, str] = dataclasses.field(
        default_factory=lambda: dict(DEFAULT_BYTE_UNITS)
    )
    log_level: str = "INFO"
    # Not an option: the file the configuration was read from (its [keystone_authtoken]
    # section configures keystonemiddleware).
    source_file: str | None = None
    # Not an option: "[section] key" of each option the file sets that this service does
    # not use (logged as a warning at start).
    unused_options: tuple[str, ...] = ()
    # Not an option: False when a file was read that names no database (nor does the
    # environment): the service then refuses to start rather than invent one.
    database_named: bool = dataclasses.field(default=True, compare=False)
    log_format: str = "text"
    metrics_unauthenticated: bool = False
    group_flat_requests: str = GroupOptions.flat_requests
    group_node_ranking: str = GroupOptions.node_ranking
    group_sibling_groups: str = GroupOptions.sibling_groups
    group_candidates_budget_ms: int = 0
    k8s_scheduler_prefix: str = DEFAULT_SCHEDULER_PREFIX
    k8s_scheduler_clients: tuple[str, ...] = ("127.0.0.0/8", "::1/128")
    k8s_kubeconfig: str | None = None
    k8s_api_timeout_seconds: float = 5.0
    k8s_topology_annotation_prefix: str = DEFAULT_TOPOLOGY_PREFIX
    k8s_gang_required_level: str = ""
    k8s_gang_preferred_level: str = ""
    k8s_gang_share_nodes: bool = False
    k8s_gang_reservation_timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.auth_strategy not in AUTH_STRATEGIES:
            raise ConfigError(
                f"auth_strategy must be one of {', '.join(AUTH_STRATEGIES)}, "
                f"not {self.auth_strategy!r}"
            )
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(
                f"[logging] format must be one of {', '.join(LOG_FORMATS)}, not {self.log_format!r}"
            )
        if self.log_level.upper() not in LOG_LEVELS:
            raise ConfigError(
                f"[logging] level must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}"
            )
        if self.auth_strategy == "token" and not self.tokens_file:
            raise ConfigError("auth_strategy = token needs tokens_file")
        if self.auth_strategy == "keystone" and not self.source_file:
            raise ConfigError(
                "auth_strategy = keystone needs a configuration file with a "
                "[keystone_authtoken] section"
            )
        if self.database_max_pool_size < 0 or self.database_max_overflow < 0:
            raise ConfigError(
                "[placement_database] max_pool_size and max_overflow must be 0 or more"
            )
        if self.database_max_retries < -1 or self.database_retry_interval < 0:
            raise ConfigError(
                "[placement_database] max_retries must be -1 (forever) or "
                "more, retry_interval 0 or more"
            )
        if self.threads < 1:
            raise ConfigError("threads must be 1 or more")
        if not self.client_timeout_seconds > 0:
            raise ConfigError("client_timeout_seconds must be more than 0")
        if self.max_request_body_mib < 1:
            raise ConfigError("max_request_body_mib must be 1 or more")
        if self.allocation_candidates_cache_mib < 0:
            raise ConfigError("allocation_candidates_cache_mib must be 0 or more")
        if self.allocation_candidates_budget_ms < 0:
            raise ConfigError("allocation_candidates_budget_ms must be 0 or more")
        if not 0 <= self.group_candidates_budget_ms <= MAX_BUDGET_MS:
            raise ConfigError(
                f"[group_resources] candidates_budget_ms must be 0 (none) to {MAX_BUDGET_MS}"
            )
        if self.max_allocation_candidates == 0 or self.max_allocation_candidates < -1:
            raise ConfigError("max_allocation_candidates must be -1 (no bound) or 1 or more")
        _check_k8s(self)
        for option, values in CHOICES.items():
            value = getattr(self, f"group_{option}")
            if value not in values:
                raise ConfigError(
                    f"[group_resources] {option} must be one of {', '.join(values)}, not {value!r}"
                )
        for name, unit in self.group_resource_byte_units.items():
            if unit not in ("MB", "GB"):
                raise ConfigError(f"group_resources byte_units: {name}:{unit} is not MB or GB")
        for name, class_name in self.group_resource_classes.items():
            if not class_name or not all(
                c.isupper() or c.isdigit() or c == "_" for c in class_name
            ):
                raise ConfigError(
                    f"group_resources standard_classes: {name}:{class_name} is not a class name"
                )
            unit = lookup_ignoring_case(self.group_resource_byte_units, name) or "count"
            if unit != unit_of_class(class_name):
                raise ConfigError(
                    f"group_resources: {name} becomes {class_name}, which counts in "
                    f"{unit_of_class(class_name)}, but byte_units gives it {unit}"
                )

    def database(self) -> DatabaseOptions:
        """How the engine connects (the [placement_database] options). ConfigError when
        the configuration file named no database: an operator who points the service at
        upstream's file expects its database, never a new SQLite file served empty."""
        if not self.database_named:
            raise ConfigError(
                f"{self.source_file} names no database: set [placement_database] "
                "connection (where upstream Placement's file has it) or PLACEMENT_DATABASE_URL"
            )
        return DatabaseOptions(
            max_pool_size=self.database_max_pool_size,
            max_overflow=self.database_max_overflow,
            connection_recycle_time=self.database_connection_recycle_time,
            max_retries=self.database_max_retries,
            retry_interval=self.database_retry_interval,
            mysql_sql_mode=self.database_mysql_sql_mode,
        )

    def group_naming(self) -> Naming:
        """How the group-resource translator names classes, from the two options."""
        return Naming(
            standard_classes=self.group_resource_classes,
            byte_units=self.group_resource_byte_units,
        )

    def group_options(self) -> GroupOptions:
        """The translator's readings for a request that does not choose them."""
        return GroupOptions(
            flat_requests=self.group_flat_requests,
            node_ranking=self.group_node_ranking,
            sibling_groups=self.group_sibling_groups,
        )

    def replace(self, **changes: Any) -> "Config":
        return dataclasses.replace(self, **changes)


def _check_k8s(config: "Config") -> None:
    prefix = config.k8s_scheduler_prefix
    if not prefix.startswith("/") or prefix.endswith("/") or "<" in prefix:
        raise ConfigError(
            f"[k8s] scheduler_prefix must be a path such as /k8s/scheduler, not {prefix!r}"
        )
    for network in config.k8s_scheduler_clients:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ConfigError(f"[k8s] scheduler_clients: {exc}") from exc
    if not config.k8s_api_timeout_seconds > 0:
        raise ConfigError("[k8s] api_timeout_seconds must be more than 0")
    if not config.k8s_gang_reservation_timeout > 0:
        raise ConfigError("[k8s] gang_reservation_timeout must be more than 0")


class ConfigError(ValueError):
    """The configuration cannot be used as given."""


# Options also read from another place, by field: (section, key), read when the option's
# own is not given (a file written for an earlier release keeps working).
MOVED_KEYS = {"log_level": ("DEFAULT", "log_level"), "database_url": ("database", "connection")}


def load_config(path: str | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Build a Config from defaults, the INI file at ``path`` and ``environ``.

    Without ``path``, ``PLACEMENT_CONFIG_FILE`` names the file, else ``placement.conf``
    in the folder ``OS_PLACEMENT_CONFIG_DIR`` names (upstream's variable), else
    /etc/placement/placement.conf when it exists. A service given a file never invents
    a database: the file (or the environment) must name one.
    """
    environ = os.environ if environ is None else environ
    path = path or environ.get("PLACEMENT_CONFIG_FILE")
    if path is None and environ.get(UPSTREAM_CONFIG_DIR_VARIABLE):
        path = os.path.join(environ[UPSTREAM_CONFIG_DIR_VARIABLE], CONFIG_FILE_NAME)
    if path is None and os.path.exists(DEFAULT_CONFIG_FILE):
        path = DEFAULT_CONFIG_FILE
    values: dict[str, Any] = {}
    if path:
        parser = configparser.ConfigParser(interpolation=None)
        if not parser.read(path):
            raise ConfigError(f"cannot read configuration file {path}")
        for option in OPTIONS:
            if parser.has_option(option.section, option.key):
                values[option.field] = _parse(option, parser.get(option.section, option.key))
            elif option.field in MOVED_KEYS and parser.has_option(*MOVED_KEYS[option.field]):
                text = parser.get(*MOVED_KEYS[option.field])
                values[option.field] = _parse(option, text)
    for option in OPTIONS:
        if option.env in environ:
            values[option.field] = _parse(option, environ[option.env])
    unused = _unused_options(path) if path else ()
    named = not path or "database_url" in values
    return Config(**values, source_file=path or None, unused_options=unused, database_named=named)


# Sections read whole by the libraries the service hands the file to.
LIBRARY_SECTIONS = frozenset({"keystone_authtoken"})


def _unused_options(path: str) -> tuple[str, ...]:
    """The options the file sets that nothing here reads, as "[section] key"."""
    # [DEFAULT] read as a section of its own, not as every section's fallback.
    parser = configparser.ConfigParser(interpolation=None, default_section="\0")
    parser.read(path)
    read = {(o.section, o.key) for o in OPTIONS} | set(MOVED_KEYS.values())
    return tuple(
        f"[{section}] {key}"
        for section in parser.sections()
        if section not in LIBRARY_SECTIONS
        for key in parser[section]
        if (section, key) not in read
    )


def _parse(option: Option, text: str) -> Any:
    try:
        return option.parse(text)
    except ValueError as exc:
        raise ConfigError(f"[{option.section}] {option.key}: {exc}") from exc


def render_sample() -> str:
    """The text of etc/placement.conf.sample, generated from ``OPTIONS``."""
    defaults = Config()
    lines = [
        "# Sample configuration for the placement service.",
        "# Every option is shown with its default. Environment variables override the file.",
        "",
    ]
    sections: dict[str, list[Option]] = {}
    for option in OPTIONS:
        sections.setdefault(option.section, []).append(option)
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for option in options:
            default = getattr(defaults, option.field)
            if isinstance(default, bool):
                default = str(default).lower()
            elif isinstance(default, tuple):
                default = ", ".join(default)
            elif isinstance(default, Mapping):
                default = ", ".join(f"{key}:{value}" for key, value in default.items())
            lines.append(f"# {option.help}")
            lines.append(f"# Environment variable: {option.env}")
            lines.append(f"#{option.key} = {'' if default is None else default}")
            lines.append("")
    return "\n".join(lines)
