"""Table aliases used by more than one query, defined once."""

from placement.db.tables import resource_providers

root_provider = resource_providers.alias("root_provider")
parent_provider = resource_providers.alias("parent_provider")
