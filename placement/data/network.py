"""SQL for the network as levels (``placement.gangs``): the levels, each node's domains,
and the consumers of each gang.

Writers of the network take one lock (``lock_network``) before their first read, so a
write is checked against the network as the writer before it committed it.
"""

from collections.abc import Mapping

from sqlalchemy import Connection, delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from placement import errors
from placement.clock import utcnow
from placement.db.tables import gang_members, network_domains, network_levels
from placement.gangs.network import Network

NETWORK_LOCK_SPACE = 0x4E455457  # "NETW": pg_advisory_xact_lock's first key


def lock_network(conn: Connection) -> None:
    """Hold off every other write of the network until this transaction ends. As
    ``group_nodes.lock_node``: a PostgreSQL advisory lock; SQLite's and MySQL's write
    transactions are serialized already."""
    # SELECT pg_advisory_xact_lock(:space, 0)
    if conn.dialect.name == "postgresql":
        conn.execute(select(func.pg_advisory_xact_lock(NETWORK_LOCK_SPACE, 0)))


def read_network(conn: Connection) -> Network:
    """The levels and every node's domains, as stored."""
    # SELECT position, name FROM network_levels ORDER BY position
    levels = tuple(conn.scalars(select(network_levels.c.name).order_by(network_levels.c.position)))
    # SELECT node_name, position, domain FROM network_domains ORDER BY node_name, position
    rows = conn.execute(
        select(
            network_domains.c.node_name, network_domains.c.position, network_domains.c.domain
        ).order_by(network_domains.c.node_name, network_domains.c.position)
    )
    found: dict[str, list[str]] = {}
    for node, _position, domain in rows:
        found.setdefault(node, []).append(domain)
    return Network(levels, {node: tuple(domains) for node, domains in found.items()})


def replace_network(conn: Connection, network: Network) -> None:
    """Store ``network`` (checked by its caller) in place of the one stored."""
    conn.execute(delete(network_domains))
    conn.execute(delete(network_levels))
    if network.levels:
        conn.execute(
            insert(network_levels),
            [{"position": position, "name": name} for position, name in enumerate(network.levels)],
        )
    _insert_domains(conn, network.domains)


def replace_node(conn: Connection, node: str, domains: tuple[str, ...] | None) -> None:
    """Store the node's domains (None: the node leaves the network)."""
    conn.execute(delete(network_domains).where(network_domains.c.node_name == node))
    if domains is not None:
        _insert_domains(conn, {node: domains})


def _insert_domains(conn: Connection, domains: Mapping[str, tuple[str, ...]]) -> None:
    rows = [
        {"node_name": node, "position": position, "domain": domain}
        for node, node_domains in domains.items()
        for position, domain in enumerate(node_domains)
    ]
    if rows:
        conn.execute(insert(network_domains), rows)


def record_gang(conn: Connection, gang_uuid: str, consumer_uuids: list[str]) -> None:
    """The gang's members, in order; Conflict when the gang (or a member) is recorded."""
    now = utcnow()
    try:
        with conn.begin_nested():
            conn.execute(
                insert(gang_members),
                [
                    {
                        "gang_uuid": gang_uuid,
                        "member": index,
                        "consumer_uuid": consumer,
                        "created_at": now,
                    }
                    for index, consumer in enumerate(consumer_uuids)
                ],
            )
    except IntegrityError as exc:
        raise errors.Conflict(
            f"Gang {gang_uuid} (or one of its consumers) was claimed concurrently.",
            code=errors.CONCURRENT_UPDATE,
        ) from exc


def gang_consumers(conn: Connection, gang_uuid: str) -> list[str]:
    """The consumers of the gang, in member order (none: no such gang)."""
    # SELECT consumer_uuid FROM gang_members WHERE gang_uuid = :gang ORDER BY member
    return list(
        conn.scalars(
            select(gang_members.c.consumer_uuid)
            .where(gang_members.c.gang_uuid == gang_uuid)
            .order_by(gang_members.c.member)
        )
    )


def gangs_of_consumers(conn: Connection, consumer_uuids: list[str]) -> dict[str, str]:
    """Consumer -> its gang, of those of ``consumer_uuids`` in one."""
    rows = conn.execute(
        select(gang_members.c.consumer_uuid, gang_members.c.gang_uuid).where(
            gang_members.c.consumer_uuid.in_(consumer_uuids)
        )
    )
    return {consumer: gang for consumer, gang in rows}


def delete_gang(conn: Connection, gang_uuid: str) -> None:
    conn.execute(delete(gang_members).where(gang_members.c.gang_uuid == gang_uuid))
