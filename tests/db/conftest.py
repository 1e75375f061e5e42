from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bench.datasets import create_shop, recreate_schema, schema_url
from bot.config import Limits
from bot.db import Database, DatabaseRegistry
from tests.db.support import SCRATCH_SCHEMA, SHOP_SCHEMA, staging

_shop_created = False


@pytest.fixture
async def shop_url(mysql_url: str) -> str:
    """The shop schema (built once per test run; tests never change it)."""
    global _shop_created
    if not _shop_created:
        await create_shop(mysql_url, SHOP_SCHEMA)
        _shop_created = True
    return schema_url(mysql_url, SHOP_SCHEMA)


@pytest.fixture
async def scratch_url(mysql_url: str) -> str:
    """An empty schema of its own for each test that writes."""
    await recreate_schema(mysql_url, SCRATCH_SCHEMA)
    return schema_url(mysql_url, SCRATCH_SCHEMA)


@pytest.fixture
async def registry(shop_url: str) -> AsyncIterator[DatabaseRegistry]:
    opened = DatabaseRegistry([staging(shop_url)], Limits())
    yield opened
    await opened.close()


@pytest.fixture
def shop(registry: DatabaseRegistry) -> Database:
    return registry.get("shop-staging")


@pytest.fixture
async def scratch(scratch_url: str) -> AsyncIterator[Database]:
    opened = DatabaseRegistry([staging(scratch_url, name="scratch")], Limits())
    yield opened.get("scratch")
    await opened.close()
