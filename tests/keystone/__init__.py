"""A real Keystone for the tests of ``auth_strategy = keystone``.

`make test` installs Keystone into ``.venv-keystone`` (pinned by ``constraints.txt``);
``PLACEMENT_KEYSTONE_PYTHON`` names another interpreter that has it. It runs as a
subprocess (``serve_keystone.py``) on a loopback port, on SQLite in a folder of its
own, set up as an operator would: ``keystone-manage db_sync``, ``fernet_setup``,
``credential_setup``, ``bootstrap``; then the users below are created through its
API with the admin's token, and each test asks it for real tokens.

Without it the Keystone tests are skipped, except with ``CI=true``, where that is
a failure.
"""

import contextlib
import grp
import os
import pwd
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.ports import free_port
from tests.side_process import python_of, require, stop

LAUNCHER = Path(__file__).with_name("serve_keystone.py")
ADMIN_PASSWORD = "admin-secret"
DOMAIN = {"id": "default"}


class KeystoneUnavailable(RuntimeError):
    """Keystone is not installed or did not start."""


@dataclass(frozen=True)
class User:
    name: str
    password: str
    project: str  # the project its token is scoped to
    roles: tuple[str, ...]


# Who the tests are, as a cloud has them: the service users of placement (which
# keystonemiddleware logs in as) and nova, an operator, a project's member and reader.
USERS = (
    User("placement", "placement-secret", "service", ("service",)),
    User("nova", "nova-secret", "service", ("service",)),
    User("operator", "operator-secret", "admin", ("admin",)),
    User("alice", "alice-secret", "demo", ("member",)),
    User("rita", "rita-secret", "demo", ("reader",)),
)


@dataclass
class Keystone:
    url: str  # the identity endpoint's base, e.g. http://127.0.0.1:5000
    project_ids: dict[str, str]

    def token(self, user: str) -> str:
        """A new project-scoped token of ``user`` (one of USERS, or ``admin``)."""
        if user == "admin":
            password, project = ADMIN_PASSWORD, "admin"
        else:
            found = next(u for u in USERS if u.name == user)
            password, project = found.password, found.project
        return _token(self.url, user, password, project)

    def authtoken_section(self) -> str:
        """The ``[keystone_authtoken]`` section of a placement configuration file."""
        placement = USERS[0]
        return (
            "[keystone_authtoken]\n"
            f"www_authenticate_uri = {self.url}\n"
            f"auth_url = {self.url}\n"
            "auth_type = password\n"
            f"username = {placement.name}\n"
            f"password = {placement.password}\n"
            f"project_name = {placement.project}\n"
            "user_domain_name = Default\n"
            "project_domain_name = Default\n"
        )


def keystone_python() -> Path:
    return python_of(".venv-keystone", "PLACEMENT_KEYSTONE_PYTHON", KeystoneUnavailable)


@contextlib.contextmanager
def keystone_server(folder: Path) -> Iterator[Keystone]:
    """Set up and run Keystone in ``folder``; yield it with USERS created."""
    python = require(keystone_python, "Keystone")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    config = folder / "keystone.conf"
    config.write_text(
        "[DEFAULT]\n"
        f"log_file = {folder / 'keystone.log'}\n"
        "[database]\n"
        f"connection = sqlite:///{folder / 'keystone.sqlite'}\n"
        "[token]\nprovider = fernet\n"
        f"[fernet_tokens]\nkey_repository = {folder / 'fernet-keys'}\n"
        f"[credential]\nkey_repository = {folder / 'credential-keys'}\n"
    )
    manage = [str(python.parent / "keystone-manage"), "--config-file", str(config)]
    owner = [
        "--keystone-user",
        pwd.getpwuid(os.getuid()).pw_name,
        "--keystone-group",
        grp.getgrgid(os.getgid()).gr_name,
    ]
    for step in (
        ["db_sync"],
        ["fernet_setup", *owner],
        ["credential_setup", *owner],
        [
            "bootstrap",
            "--bootstrap-password",
            ADMIN_PASSWORD,
            "--bootstrap-admin-url",
            f"{url}/v3",
            "--bootstrap-public-url",
            f"{url}/v3",
            "--bootstrap-internal-url",
            f"{url}/v3",
            "--bootstrap-region-id",
            "RegionOne",
        ],
    ):
        done = subprocess.run(manage + step, capture_output=True, text=True, cwd=folder)
        if done.returncode != 0:
            _fail(f"keystone-manage {step[0]} failed: {done.stderr[-2000:]}")
    log = open(folder / "serve.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(python), str(LAUNCHER), str(config), str(port)],
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        cwd=folder,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    try:
        assert process.stdout is not None
        if process.stdout.readline().strip() != "ready":
            process.wait(timeout=10)
            _fail(f"Keystone did not start: {(folder / 'serve.log').read_text()[-2000:]}")
        yield Keystone(url, _create_users(url))
    finally:
        stop(process)
        log.close()


def _fail(message: str) -> None:
    raise KeystoneUnavailable(message)


def _token(url: str, user: str, password: str, project: str) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {"user": {"name": user, "domain": DOMAIN, "password": password}},
            },
            "scope": {"project": {"name": project, "domain": DOMAIN}},
        }
    }
    for attempt in range(50):  # the first requests may race Keystone's start
        try:
            answer = requests.post(f"{url}/v3/auth/tokens", json=body, timeout=30)
            break
        except requests.ConnectionError:
            if attempt == 49:
                raise
            time.sleep(0.1)
    answer.raise_for_status()
    return answer.headers["X-Subject-Token"]


def _create_users(url: str) -> dict[str, str]:
    """USERS and their projects and roles, made by the admin; the project ids by name."""
    session = requests.Session()
    session.headers["X-Auth-Token"] = _token(url, "admin", ADMIN_PASSWORD, "admin")

    def call(method: str, path: str, **kwargs) -> dict:
        answer = session.request(method, f"{url}/v3{path}", timeout=30, **kwargs)
        answer.raise_for_status()
        return answer.json() if answer.content else {}

    project_ids = {p["name"]: p["id"] for p in call("GET", "/projects")["projects"]}
    role_ids = {r["name"]: r["id"] for r in call("GET", "/roles")["roles"]}
    for user in USERS:
        if user.project not in project_ids:
            project = call(
                "POST",
                "/projects",
                json={"project": {"name": user.project, "domain_id": "default"}},
            )["project"]
            project_ids[user.project] = project["id"]
        for role in user.roles:
            if role not in role_ids:
                role_ids[role] = call("POST", "/roles", json={"role": {"name": role}})["role"]["id"]
        created = call(
            "POST",
            "/users",
            json={
                "user": {
                    "name": user.name,
                    "password": user.password,
                    "domain_id": "default",
                    "default_project_id": project_ids[user.project],
                }
            },
        )["user"]
        for role in user.roles:
            call(
                "PUT",
                f"/projects/{project_ids[user.project]}/users/{created['id']}"
                f"/roles/{role_ids[role]}",
            )
    return project_ids
