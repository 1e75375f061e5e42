"""The registry: configured databases by name, nothing opened before first use."""

from __future__ import annotations

import pytest

from bot.config import Limits
from bot.db import Database, DatabaseRegistry, UnknownObject
from tests.db.support import staging

CONFIGURED = [
    staging("mysql://agent@127.0.0.1:1/shop", name="shop-staging"),
    staging("mysql://agent@127.0.0.1:1/shop", name="shop-production"),
    staging("mysql://agent@127.0.0.1:1/billing", name="billing"),
]


def test_names_are_the_configured_ones_in_order() -> None:
    registry = DatabaseRegistry(CONFIGURED, Limits())

    assert registry.names() == ["shop-staging", "shop-production", "billing"]


def test_get_returns_the_database_with_its_config() -> None:
    registry = DatabaseRegistry(CONFIGURED, Limits())

    database = registry.get("billing")

    assert isinstance(database, Database)
    assert database.config is CONFIGURED[2]


# (asked for, message, why)
UNKNOWN = [
    (
        "shop-stagin",
        "unknown database 'shop-stagin'; closest: shop-staging, shop-production",
        "a typo names the closest",
    ),
    (
        "SHOP-STAGING",
        "unknown database 'SHOP-STAGING'; closest: shop-staging, shop-production",
        "names are exact, but case does not hide the match",
    ),
    (
        "zzz",
        "unknown database 'zzz'; known: shop-staging, shop-production, billing",
        "nothing close: list what there is",
    ),
]


@pytest.mark.parametrize(("name", "message", "reason"), UNKNOWN, ids=[r[2] for r in UNKNOWN])
def test_an_unknown_database_lists_the_closest_names(name: str, message: str, reason: str) -> None:
    registry = DatabaseRegistry(CONFIGURED, Limits())

    with pytest.raises(UnknownObject) as unknown:
        registry.get(name)

    assert unknown.value.message == message


async def test_nothing_connects_until_first_use_and_closing_unused_is_fine() -> None:
    # Every configured server here is dead; building and closing the registry still works.
    registry = DatabaseRegistry(CONFIGURED, Limits())

    assert registry.get("shop-staging").config.name == "shop-staging"
    await registry.close()
