"""Fixtures shared by the CLI tests."""

import json

import pytest

from placement import cli
from placement.config import OPTIONS


@pytest.fixture
def run(tmp_path, monkeypatch, capsys):
    """Run the CLI on a tmp SQLite database; returns (exit status, parsed stdout, stderr)."""
    for name in [option.env for option in OPTIONS] + ["PLACEMENT_CONFIG_FILE"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("placement.config.DEFAULT_CONFIG_FILE", str(tmp_path / "absent.conf"))
    monkeypatch.setenv("PLACEMENT_DATABASE_URL", f"sqlite:///{tmp_path / 'placement.sqlite'}")

    def invoke(*argv):
        status = cli.main(list(argv))
        captured = capsys.readouterr()
        return status, json.loads(captured.out) if captured.out else None, captured.err

    return invoke
