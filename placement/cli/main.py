"""The ``placement`` command: ``db``, ``serve``, ``group-resources``, ``devices``,
``network``, ``gangs``, ``k8s``, ``sample-config`` and ``openapi``."""

import argparse
import logging
import sys

from placement import server
from placement.app import is_loopback
from placement.cli import devices as device_commands
from placement.cli import gangs as gang_commands
from placement.cli import group_resources as group_commands
from placement.cli import k8s as k8s_commands
from placement.cli.common import command_engine
from placement.config import Config, ConfigError, load_config, render_sample
from placement.db import adopt, copy, give_back, migrate
from placement.db.engine import is_sqlite, wait_until_reachable
from placement.db.survey import survey
from placement.observability.request_log import configure_logging
from placement.openapi.document import render as render_openapi

LOG = logging.getLogger("placement")


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        config = load_config(args.config_file)
    except ConfigError as exc:
        print(f"placement: configuration error: {exc}", file=sys.stderr)
        return 2
    configure_logging(config)
    # Alembic says which migrations run at INFO on every command; worth seeing only on request.
    logging.getLogger("alembic").setLevel(logging.NOTSET if args.verbose else logging.WARNING)
    try:
        return args.run(config, args)
    except ConfigError as exc:
        print(f"placement: configuration error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placement",
        description="Run and administer the placement service: db, serve, group-resources, "
        "devices, network, gangs, k8s, sample-config, policy-sample, openapi. COMMAND -h "
        "describes each.",
    )
    parser.add_argument("--config-file", help="INI configuration file (see etc/)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="also log the database migrations run"
    )
    commands = parser.add_subparsers(title="commands")

    db = commands.add_parser("db", help="database schema").add_subparsers(title="db commands")
    upgrade = db.add_parser(
        "upgrade",
        help="apply every migration to the database; a database of upstream "
        "openstack-placement 16.0.0 is taken over in place",
    )
    upgrade.add_argument(
        "--dry-run",
        action="store_true",
        help="check the database and say what would be done, without changing it",
    )
    upgrade.set_defaults(run=_db_upgrade)
    returning = db.add_parser(
        "return-to-upstream",
        help="rebuild the database at upstream openstack-placement 16.0.0's schema, with "
        "everything it holds, for upstream to serve it again",
    )
    returning.add_argument(
        "--discard-extensions",
        action="store_true",
        help="give it back even though it holds what this service's own features keep "
        "(device topologies, the network's levels and domains, gangs): upstream has no place "
        "for them; the nodes and consumers stay as plain providers and consumers",
    )
    returning.set_defaults(run=_db_return_to_upstream)
    current = db.add_parser("current", help="print the schema revision of the database")
    current.set_defaults(run=_db_current)
    copy = db.add_parser(
        "copy", help="copy a whole database into an empty one (any backends), and check it"
    )
    copy.add_argument("--from", dest="source", required=True, help="the source's URL")
    copy.add_argument("--to", dest="target", required=True, help="an empty database's URL")
    copy.set_defaults(run=_db_copy)

    serve = commands.add_parser("serve", help="run the API with gunicorn")
    serve.add_argument("--host", help="listen address (default from configuration)")
    serve.add_argument("--port", type=int, help="listen port (default from configuration)")
    serve.add_argument("--workers", type=int, help="worker processes")
    serve.add_argument("--threads", type=int, help="threads of each worker process")
    serve.add_argument(
        "--force-noauth-on-public-address",
        action="store_true",
        help="allow auth_strategy = noauth2 on a non-loopback address (unsafe)",
    )
    serve.set_defaults(run=_serve)

    group_commands.add_commands(commands)
    device_commands.add_commands(commands)
    gang_commands.add_commands(commands)
    k8s_commands.add_commands(commands)

    sample = commands.add_parser("sample-config", help="print the sample configuration file")
    sample.set_defaults(run=lambda config, args: print(render_sample()) or 0)
    policy_sample = commands.add_parser(
        "policy-sample", help="print every policy rule with its default (oslo.policy's YAML)"
    )
    policy_sample.set_defaults(run=_policy_sample)
    openapi = commands.add_parser(
        "openapi", help="print the OpenAPI document of the API (JSON; api-ref/openapi.json)"
    )
    openapi.set_defaults(run=_openapi)
    return parser


def _policy_sample(config: Config, args) -> int:
    from placement import policy

    policy.write_sample()
    return 0


def _openapi(config: Config, args) -> int:
    sys.stdout.write(render_openapi())
    return 0


def _db_upgrade(config: Config, args) -> int:
    engine = command_engine(config.database_url, config)
    try:
        wait_until_reachable(engine, config.database())
        with engine.connect() as conn:
            found = survey(conn)
        if found.kind in ("giving-back", "given-back"):
            print(
                f"placement: the database is {found.described}: run 'placement db "
                "return-to-upstream' again to finish",
                file=sys.stderr,
            )
            return 2
        if found.kind not in ("empty", "ours"):
            adopt.adopt(engine, say=print, dry_run=args.dry_run)
        elif args.dry_run:
            print(
                f"the database is {found.described}; revision {migrate.head_revision()} "
                "is this service's latest"
            )
        if args.dry_run:
            return 0
        migrate.upgrade(engine)
        print(f"database at revision {migrate.current_revision(engine)}")
    except (adopt.AdoptionRefused, migrate.SchemaOutOfDate) as exc:
        print(f"placement: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    return 0


def _db_return_to_upstream(config: Config, args) -> int:
    engine = command_engine(config.database_url, config)
    try:
        wait_until_reachable(engine, config.database())
        give_back.give_back(engine, say=print, discard_extensions=args.discard_extensions)
    except give_back.GiveBackRefused as exc:
        print(f"placement: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    return 0


def _db_copy(config: Config, args) -> int:
    source = command_engine(args.source, config)
    target = command_engine(args.target, config)
    try:
        checks = copy.copy_database(source, target, say=print)
    except copy.CopyRefused as exc:
        print(f"placement: {exc}", file=sys.stderr)
        return 2
    finally:
        source.dispose()
        target.dispose()
    print(f"{'table':32} {'rows (from)':>12} {'rows (to)':>12}  checksum (from / to)")
    for check in checks:
        mark = "" if check.same else "  DIFFERENT"
        print(
            f"{check.name:32} {check.source_rows:>12} {check.target_rows:>12}  "
            f"{check.source_checksum} / {check.target_checksum}{mark}"
        )
    if all(check.same for check in checks):
        print("the copy is the same as its source")
        return 0
    print("placement: the copy differs from its source", file=sys.stderr)
    return 1


def _db_current(config: Config, args) -> int:
    engine = command_engine(config.database_url, config)
    try:
        print(migrate.current_revision(engine) or "none")
    finally:
        engine.dispose()
    return 0


def _serve(config: Config, args) -> int:
    config = config.replace(
        bind_host=args.host or config.bind_host,
        bind_port=args.port or config.bind_port,
        workers=args.workers or config.workers,
        threads=args.threads or config.threads,
    )
    forced = args.force_noauth_on_public_address or config.allow_noauth_on_public_address
    # The application itself refuses remote clients under noauth2 unless forced too.
    config = config.replace(allow_noauth_on_public_address=forced)
    if config.auth_strategy == "noauth2" and not is_loopback(config.bind_host) and not forced:
        print(
            f"placement: refusing to listen on {config.bind_host} with auth_strategy = noauth2 "
            "(anyone could administer the service). Use a loopback address, configure "
            "auth_strategy = token, or pass --force-noauth-on-public-address.",
            file=sys.stderr,
        )
        return 2
    engine = command_engine(config.database_url, config)
    try:
        if is_sqlite(config.database_url):
            # The embedded default creates and upgrades its own schema on first run.
            migrate.upgrade(engine)
        else:
            wait_until_reachable(engine, config.database())
            migrate.require_current(engine)
    except migrate.SchemaOutOfDate as exc:
        print(f"placement: {exc}", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    server.serve(config)
    return 0


if __name__ == "__main__":
    sys.exit(main())
