"""Configuration: defaults, the INI file, environment overrides, and the sample file."""

import pathlib

import pytest
from sqlalchemy.exc import OperationalError

from placement.config import OPTIONS, Config, ConfigError, load_config, render_sample
from placement.db.engine import make_engine, wait_until_reachable
from placement.db.options import DatabaseOptions
from placement.nodes.group_options import GroupOptions

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "etc" / "placement.conf.sample"


def _write(tmp_path, text) -> str:
    path = tmp_path / "placement.conf"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_defaults_without_a_file_or_environment(tmp_path, monkeypatch):
    # Without PLACEMENT_CONFIG_FILE the default path is read only if it exists.
    monkeypatch.setattr("placement.config.DEFAULT_CONFIG_FILE", str(tmp_path / "absent.conf"))
    assert load_config(environ={}) == Config()
    assert Config().auth_strategy == "noauth2"
    assert Config().bind_host == "127.0.0.1"


def test_values_come_from_the_file(tmp_path):
    path = _write(
        tmp_path,
        """
[database]
connection = postgresql+psycopg://u:p@db/placement

[api]
auth_strategy = token
tokens_file = /etc/placement/tokens
bind_host = 0.0.0.0
bind_port = 9000
workers = 8
allow_noauth_on_public_address = yes

[placement]
randomize_allocation_candidates = true
max_allocation_candidates = -1

[logging]
level = DEBUG
format = json

[metrics]
unauthenticated = true
""",
    )
    config = load_config(path, environ={})
    assert config == Config(
        database_url="postgresql+psycopg://u:p@db/placement",
        auth_strategy="token",
        tokens_file="/etc/placement/tokens",
        bind_host="0.0.0.0",
        bind_port=9000,
        workers=8,
        allow_noauth_on_public_address=True,
        randomize_allocation_candidates=True,
        max_allocation_candidates=-1,
        log_level="DEBUG",
        source_file=path,
        log_format="json",
        metrics_unauthenticated=True,
    )


def test_a_percent_sign_is_not_interpolated(tmp_path):
    path = _write(tmp_path, "[database]\nconnection = postgresql://u:p%40ss@db/x\n")
    assert load_config(path, environ={}).database_url == "postgresql://u:p%40ss@db/x"


def test_environment_overrides_the_file(tmp_path):
    path = _write(tmp_path, "[api]\nbind_port = 9000\nworkers = 8\n")
    config = load_config(
        path, environ={"PLACEMENT_BIND_PORT": "9100", "PLACEMENT_LOG_LEVEL": "WARNING"}
    )
    assert config.bind_port == 9100
    assert config.workers == 8
    assert config.log_level == "WARNING"


def test_the_file_can_be_named_by_the_environment(tmp_path):
    path = _write(tmp_path, "[api]\nworkers = 3\n")
    assert load_config(environ={"PLACEMENT_CONFIG_FILE": path}).workers == 3


def test_every_option_has_an_environment_variable(tmp_path):
    values = {
        "database_url": "sqlite:///x.sqlite",
        "database_max_pool_size": "7",
        "database_max_overflow": "9",
        "database_connection_recycle_time": "300",
        "database_max_retries": "-1",
        "database_retry_interval": "2",
        "database_mysql_sql_mode": "ANSI",
        "auth_strategy": "token",
        "tokens_file": "/tmp/tokens",
        "bind_host": "::1",
        "bind_port": "1234",
        "workers": "5",
        "threads": "3",
        "preload_providers": "off",
        "client_timeout_seconds": "1.5",
        "allow_noauth_on_public_address": "on",
        "max_request_body_mib": "2",
        "randomize_allocation_candidates": "1",
        "max_allocation_candidates": "7",
        "allocation_candidates_cache_mib": "3",
        "allocation_candidates_budget_ms": "250",
        "group_resource_classes": "cpu:VCPU, ram:MEMORY_MB",
        "group_resource_byte_units": "ram:MB, vram:GB",
        "log_level": "ERROR",
        "policy_file": "/etc/placement/policy.yaml",
        "enforce_new_defaults": "true",
        "log_format": "json",
        "metrics_unauthenticated": "yes",
        "group_flat_requests": "fill_levels",
        "group_node_ranking": "sum",
        "group_sibling_groups": "shared",
        "group_candidates_budget_ms": "40",
        "k8s_scheduler_prefix": "/gpu-scheduler-extender",
        "k8s_scheduler_clients": "10.0.0.0/8, ::1",
        "k8s_kubeconfig": "/etc/placement/kubeconfig",
        "k8s_api_timeout_seconds": "2.5",
        "k8s_topology_annotation_prefix": "example.com/gpu-",
        "k8s_gang_required_level": "spine",
        "k8s_gang_preferred_level": "leaf",
        "k8s_gang_share_nodes": "true",
        "k8s_gang_reservation_timeout": "90",
    }
    assert {option.field for option in OPTIONS} == set(values)
    environ = {option.env: values[option.field] for option in OPTIONS}
    path = _write(tmp_path, "")
    config = load_config(path, environ=environ)
    assert config == Config(
        database_url="sqlite:///x.sqlite",
        database_max_pool_size=7,
        database_max_overflow=9,
        database_connection_recycle_time=300,
        database_max_retries=-1,
        database_retry_interval=2,
        database_mysql_sql_mode="ANSI",
        auth_strategy="token",
        tokens_file="/tmp/tokens",
        bind_host="::1",
        bind_port=1234,
        workers=5,
        threads=3,
        preload_providers=False,
        client_timeout_seconds=1.5,
        allow_noauth_on_public_address=True,
        max_request_body_mib=2,
        randomize_allocation_candidates=True,
        max_allocation_candidates=7,
        allocation_candidates_cache_mib=3,
        allocation_candidates_budget_ms=250,
        group_resource_classes={"cpu": "VCPU", "ram": "MEMORY_MB"},
        group_resource_byte_units={"ram": "MB", "vram": "GB"},
        log_level="ERROR",
        policy_file="/etc/placement/policy.yaml",
        enforce_new_defaults=True,
        source_file=path,
        log_format="json",
        metrics_unauthenticated=True,
        group_flat_requests="fill_levels",
        group_node_ranking="sum",
        group_sibling_groups="shared",
        group_candidates_budget_ms=40,
        k8s_scheduler_prefix="/gpu-scheduler-extender",
        k8s_scheduler_clients=("10.0.0.0/8", "::1"),
        k8s_kubeconfig="/etc/placement/kubeconfig",
        k8s_api_timeout_seconds=2.5,
        k8s_topology_annotation_prefix="example.com/gpu-",
        k8s_gang_required_level="spine",
        k8s_gang_preferred_level="leaf",
        k8s_gang_share_nodes=True,
        k8s_gang_reservation_timeout=90.0,
    )


def test_the_translator_readings_default_to_the_documented_ones(tmp_path):
    assert Config().group_options() == GroupOptions("anywhere", "mean", "distinct")
    path = _write(tmp_path, "[group_resources]\nnode_ranking = sum\nsibling_groups = shared\n")
    assert load_config(path, environ={}).group_options() == GroupOptions(
        "anywhere", "sum", "shared"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [("flat_requests", "fill_all"), ("node_ranking", "max"), ("sibling_groups", "Shared")],
)
def test_an_unknown_translator_reading_is_refused(tmp_path, key, value):
    path = _write(tmp_path, f"[group_resources]\n{key} = {value}\n")
    with pytest.raises(ConfigError, match=f"\\[group_resources\\] {key} must be one of"):
        load_config(path, environ={})


@pytest.mark.parametrize(
    ("classes", "units", "message"),
    [
        ("memory:MEMORY_MB", "memory:GB", "counts in MB"),
        ("cpu:vcpu", "", "not a class name"),
        ("", "memory:KB", "not MB or GB"),
        ("cpu", "", "name:VALUE"),
    ],
)
def test_inconsistent_group_resource_options_are_refused(tmp_path, classes, units, message):
    environ = {
        "PLACEMENT_GROUP_RESOURCE_CLASSES": classes,
        "PLACEMENT_GROUP_RESOURCE_BYTE_UNITS": units,
    }
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, ""), environ=environ)


@pytest.mark.parametrize("strategy", ["ldap", "", "NOAUTH2"])
def test_an_invalid_auth_strategy_is_refused(tmp_path, strategy):
    with pytest.raises(ConfigError, match="auth_strategy"):
        load_config(_write(tmp_path, ""), environ={"PLACEMENT_AUTH_STRATEGY": strategy})
    with pytest.raises(ConfigError):
        Config(auth_strategy=strategy)


@pytest.mark.parametrize("bound", ["0", "-2"])
def test_a_candidate_bound_that_is_neither_none_nor_positive_is_refused(tmp_path, bound):
    path = _write(tmp_path, f"[placement]\nmax_allocation_candidates = {bound}\n")
    with pytest.raises(ConfigError, match="max_allocation_candidates"):
        load_config(path, environ={})


@pytest.mark.parametrize("budget", ["-1", "10000000"])
def test_a_translator_budget_out_of_range_is_refused(tmp_path, budget):
    path = _write(tmp_path, f"[group_resources]\ncandidates_budget_ms = {budget}\n")
    with pytest.raises(ConfigError, match="candidates_budget_ms must be 0"):
        load_config(path, environ={})
    assert (
        load_config(
            _write(tmp_path, "[group_resources]\ncandidates_budget_ms = 0\n"), environ={}
        ).group_candidates_budget_ms
        == 0
    )


def test_a_negative_candidate_cache_size_is_refused(tmp_path):
    path = _write(tmp_path, "[placement]\nallocation_candidates_cache_mib = -1\n")
    with pytest.raises(ConfigError, match="allocation_candidates_cache_mib"):
        load_config(path, environ={})


def test_the_request_body_limit_defaults_to_10_mib_and_is_configurable(tmp_path):
    assert Config().max_request_body_mib == 10
    path = _write(tmp_path, "[api]\nmax_request_body_mib = 64\n")
    assert load_config(path, environ={}).max_request_body_mib == 64
    environ = {"PLACEMENT_MAX_REQUEST_BODY_MIB": "2"}
    assert load_config(path, environ=environ).max_request_body_mib == 2


@pytest.mark.parametrize("limit", ["0", "-1"])
def test_a_request_body_limit_below_1_mib_is_refused(tmp_path, limit):
    path = _write(tmp_path, f"[api]\nmax_request_body_mib = {limit}\n")
    with pytest.raises(ConfigError, match="max_request_body_mib"):
        load_config(path, environ={})


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("threads = 0", "threads"),
        ("client_timeout_seconds = 0", "client_timeout_seconds"),
        ("client_timeout_seconds = -2.5", "client_timeout_seconds"),
    ],
)
def test_serving_threads_and_client_timeout_must_be_positive(tmp_path, line, key):
    path = _write(tmp_path, f"[api]\n{line}\n")
    with pytest.raises(ConfigError, match=key):
        load_config(path, environ={})


def test_serving_threads_and_client_timeout_come_from_file_and_environment(tmp_path):
    path = _write(tmp_path, "[api]\nthreads = 3\nclient_timeout_seconds = 2.5\n")
    config = load_config(path, environ={"PLACEMENT_THREADS": "5"})
    assert (config.threads, config.client_timeout_seconds) == (5, 2.5)


def test_token_strategy_without_a_tokens_file_is_refused(tmp_path):
    path = _write(tmp_path, "[api]\nauth_strategy = token\n")
    with pytest.raises(ConfigError, match="tokens_file"):
        load_config(path, environ={})


@pytest.mark.parametrize(
    "text, key",
    [
        ("[api]\nbind_port = eighty\n", "bind_port"),
        ("[api]\nallow_noauth_on_public_address = maybe\n", "allow_noauth_on_public_address"),
        ("[placement]\nmax_allocation_candidates = 1.5\n", "max_allocation_candidates"),
    ],
)
def test_unparseable_values_name_the_option(tmp_path, text, key):
    with pytest.raises(ConfigError, match=key):
        load_config(_write(tmp_path, text), environ={})


def test_an_unreadable_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(str(tmp_path / "missing.conf"), environ={})


def test_replace_keeps_validation():
    assert Config().replace(workers=4).workers == 4
    with pytest.raises(ConfigError):
        Config().replace(auth_strategy="nope")


def test_the_sample_file_is_current():
    # Regenerate with: placement sample-config > etc/placement.conf.sample
    assert SAMPLE.read_text(encoding="utf-8") == render_sample() + "\n"


def test_the_sample_file_loads_to_the_defaults(tmp_path):
    assert load_config(str(SAMPLE), environ={}) == Config(source_file=str(SAMPLE))


def test_keystone_needs_a_file_for_its_authtoken_section(tmp_path):
    with pytest.raises(ConfigError, match="keystone_authtoken"):
        Config(auth_strategy="keystone")
    path = _write(tmp_path, "[api]\nauth_strategy = keystone\n")
    assert load_config(path, environ={}).source_file == path


def test_the_sample_documents_every_option():
    sample = render_sample()
    for option in OPTIONS:
        assert f"[{option.section}]" in sample
        assert f"#{option.key} = " in sample
        assert option.env in sample


@pytest.mark.parametrize(
    ("text", "message"),
    [("[logging]\nformat = xml\n", "format"), ("[logging]\nlevel = LOUD\n", "level")],
)
def test_an_unknown_log_format_or_level_is_refused(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, text), environ={})


def test_logs_are_text_at_info_and_metrics_protected_by_default():
    assert (Config().log_format, Config().log_level) == ("text", "INFO")
    assert Config().metrics_unauthenticated is False


def test_the_log_level_of_an_earlier_release_is_still_read(tmp_path):
    assert (
        load_config(_write(tmp_path, "[DEFAULT]\nlog_level = ERROR\n"), environ={}).log_level
        == "ERROR"
    )
    both = _write(tmp_path, "[DEFAULT]\nlog_level = ERROR\n[logging]\nlevel = DEBUG\n")
    assert load_config(both, environ={}).log_level == "DEBUG"


def test_upstreams_database_section_is_read_and_wins_over_ours(tmp_path):
    """A kolla or openstack-ansible placement.conf names the database in
    [placement_database]; a file written for this service's earlier releases in
    [database]. Both are read; upstream's wins where both are given."""
    path = _write(
        tmp_path,
        (
            "[placement_database]\n"
            "connection = mysql+pymysql://placement:pw@db/placement?charset=utf8\n"
            "max_pool_size = 2\nmax_overflow = 0\nconnection_recycle_time = 60\n"
            "max_retries = -1\nretry_interval = 1\nmysql_sql_mode = TRADITIONAL\n"
            "[database]\nconnection = sqlite:///ours.sqlite\n"
        ),
    )
    config = load_config(path, environ={})
    assert config.database_url == "mysql+pymysql://placement:pw@db/placement?charset=utf8"
    database = config.database()
    assert (
        database.max_pool_size,
        database.max_overflow,
        database.connection_recycle_time,
        database.max_retries,
        database.retry_interval,
        database.mysql_sql_mode,
    ) == (2, 0, 60, -1, 1, "TRADITIONAL")
    older = _write(tmp_path, "[database]\nconnection = sqlite:///ours.sqlite\n")
    assert load_config(older, environ={}).database_url == "sqlite:///ours.sqlite"


def test_database_options_out_of_range_are_refused():
    with pytest.raises(ConfigError, match="max_retries"):
        Config(database_max_retries=-2)
    with pytest.raises(ConfigError, match="max_pool_size"):
        Config(database_max_pool_size=-1)


def test_the_service_tries_again_until_the_database_answers():
    """max_retries attempts, retry_interval apart, then the database's error."""
    engine = make_engine("postgresql+psycopg://u@127.0.0.1:1/none")  # nothing listens
    slept: list[float] = []
    with pytest.raises(OperationalError):
        wait_until_reachable(
            engine, DatabaseOptions(max_retries=2, retry_interval=3), sleep=slept.append
        )
    assert slept == [3, 3]
    engine.dispose()


def test_upstreams_config_folder_variable_names_the_file(tmp_path):
    (tmp_path / "placement.conf").write_text(
        "[placement_database]\nconnection = postgresql://u@db/placement\n"
    )
    config = load_config(environ={"OS_PLACEMENT_CONFIG_DIR": str(tmp_path)})
    assert config.source_file == str(tmp_path / "placement.conf")
    assert config.database_url == "postgresql://u@db/placement"


def test_a_file_that_names_no_database_is_refused_when_the_database_is_needed(tmp_path):
    """Upstream's file with its database where this service did not look would have
    been served as a new, empty SQLite database: now the service refuses to start."""
    path = _write(tmp_path, "[api]\nauth_strategy = noauth2\n")
    config = load_config(path, environ={})
    with pytest.raises(ConfigError, match=r"names no database.*\[placement_database\]"):
        config.database()
    named = load_config(path, environ={"PLACEMENT_DATABASE_URL": "sqlite:///x.sqlite"})
    assert named.database().max_pool_size == 5
    assert Config().database().max_retries == 10  # no file: the embedded default


def test_options_the_service_does_not_use_are_named(tmp_path):
    path = _write(
        tmp_path,
        (
            "[DEFAULT]\ndebug = true\nlog_level = INFO\n"
            "[placement_database]\nconnection = sqlite:///x.sqlite\nsync_on_startup = true\n"
            "[placement]\nincomplete_consumer_project_id = 0000\n"
            "randomize_allocation_candidates = true\n"
            "[keystone_authtoken]\nauth_url = http://keystone\n"
            "[oslo_policy]\nenforce_scope = true\n"
        ),
    )
    config = load_config(path, environ={})
    assert config.unused_options == (
        "[DEFAULT] debug",
        "[placement_database] sync_on_startup",
        "[placement] incomplete_consumer_project_id",
        "[oslo_policy] enforce_scope",
    )
    assert config.randomize_allocation_candidates is True


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"k8s_scheduler_prefix": "k8s"}, "scheduler_prefix"),
        ({"k8s_scheduler_prefix": "/k8s/"}, "scheduler_prefix"),
        ({"k8s_scheduler_clients": ("10.0.0.0/33",)}, "scheduler_clients"),
        ({"k8s_api_timeout_seconds": 0}, "api_timeout_seconds"),
    ],
)
def test_the_k8s_options_are_checked(changes, words):
    with pytest.raises(ConfigError, match=words):
        Config(**changes)


@pytest.mark.parametrize("timeout", ["0", "-5"])
def test_a_pod_group_reservation_needs_some_time(tmp_path, timeout):
    environ = {"PLACEMENT_K8S_GANG_RESERVATION_TIMEOUT": timeout}
    with pytest.raises(ConfigError, match="gang_reservation_timeout must be more than 0"):
        load_config(_write(tmp_path, ""), environ=environ)


def test_gunicorns_hooks_module_preloads_as_the_configuration_says(monkeypatch):
    # gunicorn reads ``preload_app`` from the module given with -c, before it loads the app.
    import importlib

    from placement.observability import gunicorn_hooks

    monkeypatch.delenv("PLACEMENT_CONFIG_FILE", raising=False)
    monkeypatch.setenv("PLACEMENT_PRELOAD_PROVIDERS", "false")
    assert importlib.reload(gunicorn_hooks).preload_app is False
    monkeypatch.delenv("PLACEMENT_PRELOAD_PROVIDERS")
    assert importlib.reload(gunicorn_hooks).preload_app is True
