"""The ``placement`` command: serve's refusal to expose noauth2, and is_loopback."""

import logging
import pathlib

import pytest

from placement import server
from placement.cli import main as cli
from placement.config import OPTIONS

SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "etc" / "placement.conf.sample"


@pytest.fixture
def environment(tmp_path, monkeypatch):
    """A clean environment with the database in a tmp SQLite file; gunicorn never starts."""
    for name in [option.env for option in OPTIONS] + ["PLACEMENT_CONFIG_FILE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("placement.config.DEFAULT_CONFIG_FILE", str(tmp_path / "absent.conf"))
    database = tmp_path / "placement.sqlite"
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", f"sqlite:///{database}")
    started = []
    monkeypatch.setattr(cli.server, "serve", started.append)
    return {"database": database, "started": started, "tmp_path": tmp_path}


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "placement.example.com"])
def test_serve_refuses_noauth2_on_a_public_address(environment, capsys, host):
    assert cli.main(["serve", "--host", host]) == 2
    assert environment["started"] == []
    assert not environment["database"].exists()
    assert "noauth2" in capsys.readouterr().err


def test_serve_refuses_a_public_address_from_the_configuration(environment, monkeypatch):
    monkeypatch.setenv("PLACEMENT_BIND_HOST", "0.0.0.0")
    assert cli.main(["serve"]) == 2
    assert environment["started"] == []


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_serve_allows_noauth2_on_loopback(environment, host):
    assert cli.main(["serve", "--host", host, "--port", "9999"]) == 0
    [config] = environment["started"]
    assert config.bind_host == host
    assert config.bind_port == 9999
    # The embedded SQLite database is created and migrated on first run.
    assert environment["database"].exists()


def test_serve_takes_workers_and_threads(environment):
    assert cli.main(["serve", "--workers", "3", "--threads", "5"]) == 0
    [config] = environment["started"]
    assert server.worker_settings(config) == {
        "workers": 3,
        "worker_class": "placement.server.ThreadWorker",
        "threads": 5,
    }
    assert server.worker_arguments(config) == [
        "--workers",
        "3",
        "--worker-class",
        "placement.server.ThreadWorker",
        "--threads",
        "5",
    ]


def test_serve_on_a_public_address_when_forced(environment):
    assert cli.main(["serve", "--host", "0.0.0.0", "--force-noauth-on-public-address"]) == 0
    [config] = environment["started"]
    assert config.bind_host == "0.0.0.0"


def test_forcing_serve_also_lets_the_application_answer_remote_clients(environment):
    # The application refuses remote clients under noauth2 by itself (see
    # tests/api/test_hardening.py); serve's flag must reach it, not only the bind check.
    assert cli.main(["serve", "--host", "0.0.0.0", "--force-noauth-on-public-address"]) == 0
    [config] = environment["started"]
    assert config.allow_noauth_on_public_address is True


def test_serve_on_loopback_keeps_the_application_guard(environment):
    assert cli.main(["serve", "--host", "127.0.0.1"]) == 0
    [config] = environment["started"]
    assert config.allow_noauth_on_public_address is False


def test_serve_on_a_public_address_when_allowed_by_configuration(environment, monkeypatch):
    monkeypatch.setenv("PLACEMENT_ALLOW_NOAUTH_ON_PUBLIC_ADDRESS", "true")
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 0
    assert len(environment["started"]) == 1


def test_serve_on_a_public_address_with_token_auth(environment, monkeypatch):
    tokens = environment["tmp_path"] / "tokens"
    tokens.write_text("admin secret\n", encoding="utf-8")
    monkeypatch.setenv("PLACEMENT_AUTH_STRATEGY", "token")
    monkeypatch.setenv("PLACEMENT_TOKENS_FILE", str(tokens))
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 0
    [config] = environment["started"]
    assert config.auth_strategy == "token"


def test_a_configuration_error_is_exit_status_2(environment, monkeypatch, capsys):
    monkeypatch.setenv("PLACEMENT_AUTH_STRATEGY", "nope")
    assert cli.main(["serve"]) == 2
    assert environment["started"] == []
    assert "configuration error" in capsys.readouterr().err


def test_no_command_prints_help_and_is_2(environment, capsys):
    assert cli.main([]) == 2
    assert "usage" in capsys.readouterr().out


def test_sample_config_prints_the_sample_file(environment, capsys):
    assert cli.main(["sample-config"]) == 0
    assert capsys.readouterr().out == SAMPLE.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "host, expected",
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("fe80::1", False),
        ("example.com", False),
        ("", False),
    ],
)
def test_is_loopback(host, expected):
    assert cli.is_loopback(host) is expected


def test_help_lists_every_command(environment, capsys):
    parser = cli._parser()
    [commands] = [action.choices for action in parser._actions if action.dest == "==SUPPRESS=="]
    assert set(commands) == {
        "db",
        "serve",
        "group-resources",
        "devices",
        "network",
        "gangs",
        "k8s",
        "sample-config",
        "policy-sample",
        "openapi",
    }
    with pytest.raises(SystemExit):
        cli.main(["-h"])
    help_text = capsys.readouterr().out
    # The description names each command too, not only argparse's usage line.
    description = help_text.split("options:")[0].split("\n\n", 1)[1]
    for name in commands:
        assert name in description, name


@pytest.mark.parametrize(
    ("flags", "logged"), [((), False), (("-v",), True), (("--verbose",), True)]
)
def test_migrations_are_logged_only_when_verbose(environment, caplog, capsys, flags, logged):
    caplog.set_level(logging.INFO)
    assert cli.main([*flags, "devices", "show", "nobody"]) == 1
    migrations = [r for r in caplog.records if r.name.startswith("alembic")]
    assert bool(migrations) is logged
    assert "nobody" in capsys.readouterr().err


def test_errors_print_their_detail_and_only_a_specific_code(environment, capsys, tmp_path):
    assert cli.main(["devices", "show", "nobody"]) == 1
    assert capsys.readouterr().err == "placement: No device node named nobody.\n"
    request = tmp_path / "request.yaml"
    request.write_text("gpu/A/gpu/a/cards: 1\n")
    assert (
        cli.main(
            [
                "group-resources",
                "claim",
                str(request),
                "--consumer",
                "11111111-2222-3333-4444-555555555555",
                "--project",
                "p",
                "--user",
                "u",
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert err.startswith("placement: ") and err.rstrip().endswith(")")
    assert "(placement." in err and "undefined_code" not in err


@pytest.mark.parametrize("command", [["serve"], ["db", "upgrade"], ["db", "current"]])
def test_a_configuration_file_without_a_database_is_never_served_from_an_invented_one(
    environment, monkeypatch, capsys, command
):
    """Pointed at a file that names no database, the service refuses with the key to set
    instead of creating ./placement.sqlite and serving it empty."""
    monkeypatch.delenv("PLACEMENT_DATABASE_URL")
    monkeypatch.chdir(environment["tmp_path"])
    conf = environment["tmp_path"] / "placement.conf"
    conf.write_text("[api]\nauth_strategy = noauth2\n")
    assert cli.main(["--config-file", str(conf), *command]) == 2
    assert "[placement_database] connection" in capsys.readouterr().err
    assert environment["started"] == []
    assert not (environment["tmp_path"] / "placement.sqlite").exists()
