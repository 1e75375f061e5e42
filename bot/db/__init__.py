"""The MySQL/MariaDB data layer: pools, server-held read-only sessions, timeouts that kill on
the server, row caps that bound memory, catalog reads and EXPLAIN."""

from bot.db.database import Database
from bot.db.registry import DatabaseRegistry
from bot.db.types import (
    Cell,
    DbError,
    Execution,
    ResultSet,
    StatementOutcome,
    UnknownObject,
)

__all__ = [
    "Cell",
    "Database",
    "DatabaseRegistry",
    "DbError",
    "Execution",
    "ResultSet",
    "StatementOutcome",
    "UnknownObject",
]
