"""GPU memory of device nodes in KiB: CUSTOM_GPU_MEMORY_MB becomes CUSTOM_GPU_MEMORY_KB.

Device nodes kept each GPU's memory in whole MiB, rounded down: a GPU reporting
``15472384Ki`` (not a whole MiB) was kept as 15109 MiB, so asking for
all of it found nothing. Every binary quantity of memory is a whole number of
KiB, so device nodes now count GPU memory in KiB, in a class of its own
(``placement.devices.node_map``). This revision converts what was imported
before, on the device nodes only (trees whose root has a stored topology;
plain translator nodes keep CUSTOM_GPU_MEMORY_MB, in MiB):

- each inventory of CUSTOM_GPU_MEMORY_MB below a device node's root becomes
  one of CUSTOM_GPU_MEMORY_KB of 1024 times the amounts. Fields at the values
  the import writes (``min_unit`` 1, ``max_unit`` the total, ``step_size`` 1)
  get the values the import now writes, so importing the same topology again
  writes nothing; fields changed through the generic API keep their meaning
  (``min_unit`` 256 MiB is 262144 KiB);
- each allocation of it becomes the same amount in KiB;
- each such provider's generation moves (its inventories changed).

Stored documents need nothing: whole MiB are still written ``"<MiB>Mi"``. A
GPU imported before keeps the MiB it was given until imported again with its
exact memory. The downgrade converts back: totals rounded down to MiB,
allocations up, and documents' ``"<KiB>Ki"`` memory rounded down to MiB.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

import datetime
import json
import math

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

IN_MIB = "CUSTOM_GPU_MEMORY_MB"
IN_KIB = "CUSTOM_GPU_MEMORY_KB"
KIB_PER_MIB = 1024
MAX_INT = 2**31 - 1

classes = sa.table("resource_classes", sa.column("id"), sa.column("name"), sa.column("created_at"))
providers = sa.table(
    "resource_providers",
    sa.column("id"),
    sa.column("name"),
    sa.column("parent_provider_id"),
    sa.column("root_provider_id"),
    sa.column("generation"),
    sa.column("updated_at"),
)
inventories = sa.table(
    "inventories",
    sa.column("id"),
    sa.column("resource_provider_id"),
    sa.column("resource_class_id"),
    sa.column("total"),
    sa.column("reserved"),
    sa.column("min_unit"),
    sa.column("max_unit"),
    sa.column("step_size"),
    sa.column("updated_at"),
)
allocations = sa.table(
    "allocations",
    sa.column("id"),
    sa.column("resource_provider_id"),
    sa.column("resource_class_id"),
    sa.column("used"),
    sa.column("updated_at"),
)
documents = sa.table(
    "device_topologies", sa.column("node_name"), sa.column("document"), sa.column("updated_at")
)


def upgrade() -> None:
    _convert(IN_MIB, IN_KIB, _to_kib, _allocation_to_kib)


def downgrade() -> None:
    _convert(IN_KIB, IN_MIB, _to_mib, _allocation_to_mib)
    conn = op.get_bind()
    now = _now()
    for name, text in conn.execute(sa.select(documents.c.node_name, documents.c.document)).all():
        document = json.loads(text)
        changed = False
        for device in document.get("devices", []):
            memory = device.get("memory", "")
            if memory.endswith("Ki"):
                device["memory"] = f"{int(memory[:-2]) // KIB_PER_MIB}Mi"
                changed = True
        if changed:
            conn.execute(
                sa.update(documents)
                .where(documents.c.node_name == name)
                .values(document=json.dumps(document, sort_keys=True), updated_at=now)
            )


def _convert(old_class: str, new_class: str, fields, allocation) -> None:
    conn = op.get_bind()
    now = _now()
    old_id = _class_id(conn, old_class)
    if old_id is None:
        return
    # The providers below the root of a device node:
    # SELECT rp.id FROM resource_providers rp
    #   JOIN resource_providers root ON root.id = rp.root_provider_id
    #   JOIN device_topologies dt ON dt.node_name = root.name
    #  WHERE root.parent_provider_id IS NULL AND rp.parent_provider_id IS NOT NULL
    root = providers.alias("root")
    device_providers = (
        sa.select(providers.c.id)
        .join(root, root.c.id == providers.c.root_provider_id)
        .join(documents, documents.c.node_name == root.c.name)
        .where(root.c.parent_provider_id.is_(None), providers.c.parent_provider_id.isnot(None))
    )
    rows = conn.execute(
        sa.select(inventories)
        .where(
            inventories.c.resource_class_id == old_id,
            inventories.c.resource_provider_id.in_(device_providers),
        )
        .order_by(inventories.c.id)
    ).all()
    if not rows:
        return
    new_id = _class_id(conn, new_class)
    if new_id is None:
        conn.execute(sa.insert(classes).values(name=new_class, created_at=now))
        new_id = _class_id(conn, new_class)
    provider_ids = sorted({row.resource_provider_id for row in rows})
    for row in rows:
        values = fields(row)
        if max(values.values()) > MAX_INT:
            raise RuntimeError(
                f"Inventory {row.id} ({old_class} of provider {row.resource_provider_id}) "
                f"does not fit in {new_class}: {values}."
            )
        conn.execute(
            sa.update(inventories)
            .where(inventories.c.id == row.id)
            .values(resource_class_id=new_id, updated_at=now, **values)
        )
    held = conn.execute(
        sa.select(allocations.c.id, allocations.c.used)
        .where(
            allocations.c.resource_class_id == old_id,
            allocations.c.resource_provider_id.in_(provider_ids),
        )
        .order_by(allocations.c.id)
    ).all()
    for allocation_id, used in held:
        if allocation(used) > MAX_INT:
            raise RuntimeError(
                f"Allocation {allocation_id} of {old_class} does not fit in {new_class}: {used}."
            )
        conn.execute(
            sa.update(allocations)
            .where(allocations.c.id == allocation_id)
            .values(resource_class_id=new_id, used=allocation(used), updated_at=now)
        )
    for provider_id in provider_ids:
        conn.execute(
            sa.update(providers)
            .where(providers.c.id == provider_id)
            .values(generation=providers.c.generation + 1, updated_at=now)
        )


def _to_kib(row) -> dict[str, int]:
    total = row.total * KIB_PER_MIB
    return {
        "total": total,
        "reserved": row.reserved * KIB_PER_MIB,
        "min_unit": 1 if row.min_unit == 1 else row.min_unit * KIB_PER_MIB,
        "max_unit": total if row.max_unit == row.total else row.max_unit * KIB_PER_MIB,
        "step_size": 1 if row.step_size == 1 else row.step_size * KIB_PER_MIB,
    }


def _to_mib(row) -> dict[str, int]:
    total = max(row.total // KIB_PER_MIB, 1)
    return {
        "total": total,
        "reserved": math.ceil(row.reserved / KIB_PER_MIB),
        "min_unit": 1 if row.min_unit == 1 else math.ceil(row.min_unit / KIB_PER_MIB),
        "max_unit": total if row.max_unit == row.total else max(row.max_unit // KIB_PER_MIB, 1),
        "step_size": 1 if row.step_size == 1 else math.ceil(row.step_size / KIB_PER_MIB),
    }


def _allocation_to_kib(used: int) -> int:
    return used * KIB_PER_MIB


def _allocation_to_mib(used: int) -> int:
    return math.ceil(used / KIB_PER_MIB)


def _class_id(conn, name: str):
    return conn.execute(sa.select(classes.c.id).where(classes.c.name == name)).scalar()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
