"""The configured databases by name."""

from __future__ import annotations

from collections.abc import Sequence

from bot.config import DatabaseConfig, Limits
from bot.db.database import Database
from bot.db.names import unknown_name_message
from bot.db.types import UnknownObject


class DatabaseRegistry:
    def __init__(self, databases: Sequence[DatabaseConfig], limits: Limits) -> None:
        self._databases = {config.name: Database(config, limits) for config in databases}

    def names(self) -> list[str]:
        return list(self._databases)

    def get(self, name: str) -> Database:
        """The database configured under `name`; UnknownObject lists the closest names."""
        database = self._databases.get(name)
        if database is None:
            raise UnknownObject(unknown_name_message("database", name, self.names()))
        return database

    async def close(self) -> None:
        for database in self._databases.values():
            await database.close()
