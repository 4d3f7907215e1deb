"""Database access: the schema, engines, and schema migrations."""
