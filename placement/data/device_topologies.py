"""SQL for device nodes: their stored topology documents (``placement.devices``).

A device node is a group-resource node (its provider tree is the
translator's) with a topology document; the document holds what the tree
cannot: device identities, labels and NVLinks.
"""

import json

from sqlalchemy import Connection, delete, insert, select, update

from placement.clock import utcnow
from placement.db.tables import device_topologies, resource_providers


def read_documents(conn: Connection, node_names: list[str] | None = None) -> dict[str, str]:
    """Node name -> its topology document as stored, JSON text (every device node, or the
    named ones)."""
    query = select(device_topologies.c.node_name, device_topologies.c.document)
    if node_names is not None:
        query = query.where(device_topologies.c.node_name.in_(node_names))
    return {name: document for name, document in conn.execute(query)}


def store_document(conn: Connection, node_name: str, document: dict) -> bool:
    """Insert or replace the node's document; True if it changed."""
    text = json.dumps(document, sort_keys=True)
    current = conn.scalar(
        select(device_topologies.c.document).where(device_topologies.c.node_name == node_name)
    )
    if current == text:
        return False
    if current is None:
        conn.execute(
            insert(device_topologies).values(
                node_name=node_name, document=text, created_at=utcnow()
            )
        )
    else:
        conn.execute(
            update(device_topologies)
            .where(device_topologies.c.node_name == node_name)
            .values(document=text, updated_at=utcnow())
        )
    return True


def delete_document(conn: Connection, node_name: str) -> None:
    conn.execute(delete(device_topologies).where(device_topologies.c.node_name == node_name))


def device_node_names(conn: Connection) -> list[tuple[str, str]]:
    """(name, uuid) of every device node whose root provider exists, by name."""
    # SELECT dt.node_name, rp.uuid FROM device_topologies dt
    #   JOIN resource_providers rp ON rp.name = dt.node_name AND rp.parent_provider_id IS NULL
    #   ORDER BY dt.node_name
    rows = conn.execute(
        select(device_topologies.c.node_name, resource_providers.c.uuid)
        .join(
            resource_providers,
            (resource_providers.c.name == device_topologies.c.node_name)
            & resource_providers.c.parent_provider_id.is_(None),
        )
        .order_by(device_topologies.c.node_name)
    )
    return [(name, uuid) for name, uuid in rows]
