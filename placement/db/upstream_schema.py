"""The schema openstack-placement 16.0.0 leaves a database in, described as tables.

An operator who moves a cloud onto this service brings a database of that schema
(``placement.db.adopt``), and may go back to it (``placement.db.give_back``). This
module is our description of it, as a database at upstream's last revision
(``UPSTREAM_HEAD``) holds it: the tables, their columns as declared (ids are 4-byte
integers, every timestamp and a provider's name may be NULL, an allocation names its
consumer by uuid with no foreign key), and the names upstream gave its constraints
and indexes, so a database given back is one upstream's own migrations made.
``tests/functional/test_upstream_adoption.py`` compares it with the schema upstream's
``placement-manage db sync`` creates.
"""

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

# Upstream's Alembic revisions, oldest first; the last is the head of 16.0.0.
UPSTREAM_REVISIONS = (
    "b4ed3a175331",  # the tables, as they were copied out of nova_api
    "611cd6dffd7b",  # refuses providers without a root
    "b5c396305c25",  # refuses allocations without a consumer
    "422ece571366",  # consumer types
    "a082b8bb98d0",  # drops indexes that duplicate unique constraints
)
UPSTREAM_HEAD = UPSTREAM_REVISIONS[-1]

# Upstream's tables, parents before the tables that refer to them.
UPSTREAM_TABLES = (
    "resource_providers",
    "resource_classes",
    "traits",
    "placement_aggregates",
    "projects",
    "users",
    "consumer_types",
    "consumers",
    "inventories",
    "resource_provider_traits",
    "resource_provider_aggregates",
    "allocations",
)


def upstream_metadata(prefix: str = "") -> MetaData:
    """Upstream's tables, each named ``prefix`` + its name (a database's tables moved
    aside while it is rebuilt carry a prefix)."""
    metadata = MetaData()

    def table(name: str, *items) -> Table:
        return Table(
            prefix + name,
            metadata,
            Column("created_at", DateTime, nullable=True),
            Column("updated_at", DateTime, nullable=True),
            *items,
        )

    def named(name: str) -> str:
        return prefix + name

    table(
        "resource_providers",
        Column("id", Integer, primary_key=True),
        Column("uuid", String(36), nullable=False),
        Column("name", String(200), nullable=True),
        Column("generation", Integer, nullable=True),
        Column(
            "root_provider_id",
            Integer,
            ForeignKey(f"{named('resource_providers')}.id"),
            nullable=True,
        ),
        Column(
            "parent_provider_id",
            Integer,
            ForeignKey(f"{named('resource_providers')}.id"),
            nullable=True,
        ),
        UniqueConstraint("uuid", name=named("uniq_resource_providers0uuid")),
        UniqueConstraint("name", name=named("uniq_resource_providers0name")),
        Index(named("resource_providers_root_provider_id_idx"), "root_provider_id"),
        Index(named("resource_providers_parent_provider_id_idx"), "parent_provider_id"),
    )
    for name in ("resource_classes", "traits", "consumer_types"):
        table(
            name,
            Column("id", Integer, primary_key=True),
            Column("name", String(255), nullable=False),
            UniqueConstraint("name", name=named(f"uniq_{name}0name")),
        )
    table(
        "placement_aggregates",
        Column("id", Integer, primary_key=True),
        Column("uuid", String(36), nullable=True),
        UniqueConstraint("uuid", name=named("uniq_placement_aggregates0uuid")),
    )
    for name in ("projects", "users"):
        table(
            name,
            Column("id", Integer, primary_key=True),
            Column("external_id", String(255), nullable=False),
            UniqueConstraint("external_id", name=named(f"uniq_{name}0external_id")),
        )
    table(
        "consumers",
        Column("id", Integer, primary_key=True),
        Column("uuid", String(36), nullable=False),
        Column("project_id", Integer, nullable=False),
        Column("user_id", Integer, nullable=False),
        Column("generation", Integer, nullable=False, server_default="0"),
        Column(
            "consumer_type_id", Integer, ForeignKey(f"{named('consumer_types')}.id"), nullable=True
        ),
        UniqueConstraint("uuid", name=named("uniq_consumers0uuid")),
        Index(named("consumers_project_id_uuid_idx"), "project_id", "uuid"),
        Index(named("consumers_project_id_user_id_uuid_idx"), "project_id", "user_id", "uuid"),
        Index(named("consumers_consumer_type_id_idx"), "consumer_type_id"),
    )
    table(
        "inventories",
        Column("id", Integer, primary_key=True),
        Column("resource_provider_id", Integer, nullable=False),
        Column("resource_class_id", Integer, nullable=False),
        Column("total", Integer, nullable=False),
        Column("reserved", Integer, nullable=False),
        Column("min_unit", Integer, nullable=False),
        Column("max_unit", Integer, nullable=False),
        Column("step_size", Integer, nullable=False),
        Column("allocation_ratio", Float, nullable=False),
        UniqueConstraint(
            "resource_provider_id",
            "resource_class_id",
            name=named("uniq_inventories0resource_provider_resource_class"),
        ),
        Index(named("inventories_resource_class_id_idx"), "resource_class_id"),
    )
    table(
        "resource_provider_traits",
        Column("trait_id", Integer, ForeignKey(f"{named('traits')}.id"), primary_key=True),
        Column(
            "resource_provider_id",
            Integer,
            ForeignKey(f"{named('resource_providers')}.id"),
            primary_key=True,
        ),
        Index(
            named("resource_provider_traits_resource_provider_trait_idx"),
            "resource_provider_id",
            "trait_id",
        ),
    )
    table(
        "resource_provider_aggregates",
        Column("resource_provider_id", Integer, primary_key=True, autoincrement=False),
        Column("aggregate_id", Integer, primary_key=True, autoincrement=False),
        Index(named("resource_provider_aggregates_aggregate_id_idx"), "aggregate_id"),
    )
    table(
        "allocations",
        Column("id", Integer, primary_key=True),
        Column("resource_provider_id", Integer, nullable=False),
        Column("consumer_id", String(36), nullable=False),
        Column("resource_class_id", Integer, nullable=False),
        Column("used", Integer, nullable=False),
        Index(
            named("allocations_resource_provider_class_used_idx"),
            "resource_provider_id",
            "resource_class_id",
            "used",
        ),
        Index(named("allocations_resource_class_id_idx"), "resource_class_id"),
        Index(named("allocations_consumer_id_idx"), "consumer_id"),
    )
    return metadata
