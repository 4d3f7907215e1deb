"""Serve upstream openstack-placement 16.0.0 on a loopback port, for the oracle tests.

Run with the interpreter of the upstream virtualenv (``.venv-upstream``), never
imported by this project's tests: both packages are called ``placement``.

    python serve_upstream.py DATABASE_URL PORT [legacy|secure|open]

The database is created and migrated on start (``sync_on_startup``); the
service uses ``noauth2`` and the default policy, as upstream's own suite does.
It prints ``ready`` on its first line once it listens. Policy: the deprecated
rules (``enforce_new_defaults = False``), as upstream's own functional
fixtures and default deployments use them (the token ``admin`` may do
everything, POST /reshaper included); ``secure``: the new defaults only;
``open``: every rule but ``admin_api`` open to anyone (upstream's OpenPolicyFixture,
as a policy file in the working folder).
"""

import os
import sys
from pathlib import Path

from oslo_config import cfg
from oslo_policy import opts as policy_opts

from placement import conf as placement_conf
from placement import db_api, deploy, policies

# The shared launcher, by its folder: this runs under upstream's interpreter.
sys.path.append(str(Path(__file__).resolve().parents[1]))  # last: tests/keystone hides keystone
from loopback_wsgi import serve  # noqa: E402


def build_config(database_url: str, policy: str = "legacy") -> cfg.ConfigOpts:
    config = cfg.ConfigOpts()
    placement_conf.register_opts(config)
    policy_opts.set_defaults(config)
    config.set_default("connection", database_url, group="placement_database")
    config([], default_config_files=[])
    config.set_override("auth_strategy", "noauth2", group="api")
    config.set_override("enforce_new_defaults", policy == "secure", group="oslo_policy")
    if policy == "open":
        with open("open-policy.yaml", "w") as rules:
            for rule in policies.list_rules():
                if rule.name != "admin_api":
                    rules.write(f'"{rule.name}": "@"\n')
        config.set_override("policy_file", os.path.abspath("open-policy.yaml"), group="oslo_policy")
    config.set_override("sync_on_startup", True, group="placement_database")
    return config


def main() -> None:
    database_url, port = sys.argv[1], int(sys.argv[2])
    config = build_config(database_url, sys.argv[3] if len(sys.argv) > 3 else "legacy")
    db_api.configure(config)
    application = deploy.loadapp(config)
    serve(application, port)


if __name__ == "__main__":
    main()
