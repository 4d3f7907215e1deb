"""What the tests of another service in a virtualenv of its own share (upstream Placement,
Keystone): where its interpreter is, skipping or failing without it, a free port."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
IN_CI = os.environ.get("CI", "").lower() == "true"


def python_of(venv: str, variable: str, unavailable: type[Exception]) -> Path:
    """The interpreter named by the environment ``variable``, else ``venv``'s in the
    repository; ``unavailable`` raised when it does not exist."""
    given = os.environ.get(variable)
    python = Path(given) if given else REPO / venv / "bin" / "python"
    if not python.exists():
        raise unavailable(f"{python} does not exist: run `make test`, or set {variable}")
    return python


def require(find_python, what: str) -> Path:
    """``find_python()``, or skip (fail with ``CI=true``) when it raises."""
    try:
        return find_python()
    except RuntimeError as exc:
        if IN_CI:
            pytest.fail(f"CI=true and {what} is missing: {exc}")
        pytest.skip(str(exc))


def stop(process: subprocess.Popen) -> None:
    """Stop a launched server (killed after 10 s) and close its pipe."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stdout is not None:
        process.stdout.close()
