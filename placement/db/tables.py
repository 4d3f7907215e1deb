"""The database schema: every table, as SQLAlchemy Core ``Table`` objects.

This module is the single description of the schema. Alembic revisions in
``migrations/`` create it; ``tests/functional/test_migrations.py`` proves the two
agree on SQLite and PostgreSQL.

Trees are stored flat: every provider row carries its ``root_provider_id`` and
``parent_provider_id``, so whole-tree reads need no recursion. ``generation``
columns guard read-modify-write cycles (optimistic concurrency).
"""

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects import mysql

# Stable constraint names on every backend, so migrations can refer to them.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}

MAX_INT = 2147483647  # the largest value of an Integer column (amounts are stored in them)

metadata = MetaData(naming_convention=NAMING_CONVENTION)

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL and MySQL get a bigint.
IdType = BigInteger().with_variant(Integer(), "sqlite")
# MySQL's FLOAT has 4 bytes: an allocation ratio of 0.9 would read back as 0.8999999762
# and 10 x 0.9 would give a capacity of 8. DOUBLE is what the other backends store.
RatioType = Float().with_variant(mysql.DOUBLE(asdecimal=False), "mysql")
# MySQL's TEXT holds 64 KiB; a large node's topology document may be longer.
DocumentType = Text().with_variant(mysql.MEDIUMTEXT(), "mysql")


def _timestamps() -> list[Column]:
    return [
        Column("created_at", DateTime, nullable=False),
        Column("updated_at", DateTime, nullable=True),
    ]


resource_providers = Table(
    "resource_providers",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("generation", Integer, nullable=False, default=0),
    # Bumped by writes a candidate search sees that keep the generation (migration 0004).
    Column("revision", Integer, nullable=False, server_default="0"),
    Column("root_provider_id", IdType, ForeignKey("resource_providers.id"), nullable=True),
    Column("parent_provider_id", IdType, ForeignKey("resource_providers.id"), nullable=True),
    *_timestamps(),
    Index(None, "root_provider_id"),
    Index(None, "parent_provider_id"),
)

resource_classes = Table(
    "resource_classes",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    *_timestamps(),
)

inventories = Table(
    "inventories",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column(
        "resource_provider_id",
        IdType,
        ForeignKey("resource_providers.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("resource_class_id", IdType, ForeignKey("resource_classes.id"), nullable=False),
    Column("total", Integer, nullable=False),
    Column("reserved", Integer, nullable=False),
    Column("min_unit", Integer, nullable=False),
    Column("max_unit", Integer, nullable=False),
    Column("step_size", Integer, nullable=False),
    Column("allocation_ratio", RatioType, nullable=False),
    *_timestamps(),
    UniqueConstraint("resource_provider_id", "resource_class_id"),
    Index(None, "resource_class_id"),
)

traits = Table(
    "traits",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    *_timestamps(),
)

resource_provider_traits = Table(
    "resource_provider_traits",
    metadata,
    Column(
        "resource_provider_id",
        IdType,
        ForeignKey("resource_providers.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("trait_id", IdType, ForeignKey("traits.id"), primary_key=True),
    *_timestamps(),
    Index(None, "trait_id"),
)

placement_aggregates = Table(
    "placement_aggregates",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    *_timestamps(),
)

resource_provider_aggregates = Table(
    "resource_provider_aggregates",
    metadata,
    Column(
        "resource_provider_id",
        IdType,
        ForeignKey("resource_providers.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("aggregate_id", IdType, ForeignKey("placement_aggregates.id"), primary_key=True),
    *_timestamps(),
    Index(None, "aggregate_id"),
)

projects = Table(
    "projects",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("external_id", String(255), nullable=False, unique=True),
    *_timestamps(),
)

users = Table(
    "users",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("external_id", String(255), nullable=False, unique=True),
    *_timestamps(),
)

consumer_types = Table(
    "consumer_types",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    *_timestamps(),
)

consumers = Table(
    "consumers",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("project_id", IdType, ForeignKey("projects.id"), nullable=False),
    Column("user_id", IdType, ForeignKey("users.id"), nullable=False),
    Column("generation", Integer, nullable=False, default=0),
    Column("consumer_type_id", IdType, ForeignKey("consumer_types.id"), nullable=True),
    *_timestamps(),
    Index(None, "project_id", "user_id"),
)

allocations = Table(
    "allocations",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("resource_provider_id", IdType, ForeignKey("resource_providers.id"), nullable=False),
    Column(
        "consumer_id",
        IdType,
        ForeignKey("consumers.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("resource_class_id", IdType, ForeignKey("resource_classes.id"), nullable=False),
    Column("used", Integer, nullable=False),
    *_timestamps(),
    UniqueConstraint("consumer_id", "resource_provider_id", "resource_class_id"),
    Index(None, "resource_provider_id", "resource_class_id"),
    Index(None, "resource_class_id"),
)

# A device node's topology (placement.devices), stored with its provider tree:
# the devices' identities, labels and NVLinks, which the tree cannot hold.
device_topologies = Table(
    "device_topologies",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("node_name", String(200), nullable=False, unique=True),
    Column("document", DocumentType, nullable=False),
    *_timestamps(),
)

# The providers whose row changed, appended by triggers in the writer's transaction
# (migration 0003): what each worker's copy of the providers reads on a request
# (placement.data.provider_world). ``transaction_id`` is the writing transaction's id
# on PostgreSQL; SQLite needs none (its writers commit in id order). The triggers ask
# whether a provider is logged already by the writing transaction (migration 0013).
provider_changes = Table(
    "provider_changes",
    metadata,
    Column("id", IdType, primary_key=True, autoincrement=True),
    Column("provider_id", IdType, nullable=False),
    Column("transaction_id", BigInteger, nullable=True),
    Index(None, "transaction_id"),
    Index(None, "provider_id", "transaction_id"),
    sqlite_autoincrement=True,
)

# One row (id 1): the log's entries at positions below ``pruned_below`` may have been
# pruned; ``incarnation`` names the log, and changes when it starts over. On MySQL,
# ``last_position`` is the position of the newest entry (migration 0008); 0 elsewhere.
provider_changes_state = Table(
    "provider_changes_state",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("pruned_below", BigInteger, nullable=False),
    Column("incarnation", String(36), nullable=False),
    Column("last_position", BigInteger, nullable=False, server_default="0"),
)

# Where nodes sit in the network (placement.gangs): the levels, broad to narrow
# (``position`` 0 the broadest), and each node's domain at each of them. A node is
# named as its root provider; a domain's parent is the node's domain one level up.
network_levels = Table(
    "network_levels",
    metadata,
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("name", String(64), nullable=False, unique=True),
)

network_domains = Table(
    "network_domains",
    metadata,
    Column("node_name", String(200), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("domain", String(200), nullable=False),
    Index(None, "position", "domain"),
)

# The consumers claimed together as one gang (placement.gangs), released together.
gang_members = Table(
    "gang_members",
    metadata,
    Column("gang_uuid", String(36), primary_key=True),
    Column("member", Integer, primary_key=True, autoincrement=False),
    Column("consumer_uuid", String(36), nullable=False, unique=True),
    *_timestamps(),
)

# Kubernetes pod groups (placement.k8s.pod_groups): the gang reserved for each group
# at its first pod's bind (with what its pods ask), released where its pods never came;
# and each member's node, its devices as the pod annotation says them, and the pod that
# took it (none: the member's consumer in ``gang_members`` is still a placeholder).
pod_group_reservations = Table(
    "pod_group_reservations",
    metadata,
    Column("gang_uuid", String(36), primary_key=True),
    Column("pod_group", String(255), nullable=False, unique=True),
    Column("member_request", Text, nullable=False),
    Column("created_at", DateTime, nullable=False, index=True),
    Column("updated_at", DateTime, nullable=True),
)

pod_group_members = Table(
    "pod_group_members",
    metadata,
    Column("gang_uuid", String(36), primary_key=True),
    Column("member", Integer, primary_key=True, autoincrement=False),
    Column("node_name", String(200), nullable=False),
    Column("device_allocated", Text, nullable=False),
    Column("pod_uid", String(36), nullable=True, unique=True),
    *_timestamps(),
)
