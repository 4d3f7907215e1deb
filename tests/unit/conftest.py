"""Fixtures shared by the CLI tests."""

import json

import pytest

from placement.cli import main as cli
from placement.config import OPTIONS


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """Run the CLI on a tmp SQLite database; returns (exit status, parsed stdout, stderr)."""
    return _cli(tmp_path, monkeypatch, capsys, f"sqlite:///{tmp_path / 'placement.sqlite'}")


@pytest.fixture(params=["sqlite", "postgresql"])
def run_on_both(request, tmp_path, monkeypatch, capsys, empty_database_url):
    """``run``, on a new SQLite database and on a new, migrated PostgreSQL database."""
    invoke = _cli(tmp_path, monkeypatch, capsys, empty_database_url(request.param))
    if request.param == "postgresql":
        status, _, err = invoke("db", "upgrade")
        assert status == 0, err
    return invoke


def _cli(tmp_path, monkeypatch, capsys, database_url: str):
    for name in [option.env for option in OPTIONS] + ["PLACEMENT_CONFIG_FILE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("placement.config.DEFAULT_CONFIG_FILE", str(tmp_path / "absent.conf"))
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", database_url)

    def invoke(*argv):
        status = cli.main(list(argv))
        captured = capsys.readouterr()
        try:
            body = json.loads(captured.out) if captured.out else None
        except ValueError:
            body = captured.out
        return status, body, captured.err

    return invoke
