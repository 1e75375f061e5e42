"""The benchmark and test data are deterministic and quick to make."""

from __future__ import annotations

from bench.datasets import create_large_table, create_shop, schema_url
from tests.db.support import server_rows
from tests.schemas import run_schema

SHOP_COPY = run_schema("dbagent_t_db_shop")
LARGE = run_schema("dbagent_t_db_large")

CHECKSUM = "SELECT COUNT(*), SUM(total), SUM(customer_id * id) FROM orders"


async def test_the_shop_schema_holds_the_same_rows_every_time(mysql_url: str) -> None:
    first = await create_shop(mysql_url, SHOP_COPY)
    url = schema_url(mysql_url, SHOP_COPY)
    first_sum = await server_rows(url, CHECKSUM)
    second = await create_shop(mysql_url, SHOP_COPY)

    assert first == second
    assert first["customers"] == 1000 and first["orders"] == 3000
    assert 3000 < first["order_items"] < 12000
    assert await server_rows(url, CHECKSUM) == first_sum


async def test_the_large_table_is_built_inside_the_server_and_kept(mysql_url: str) -> None:
    assert await create_large_table(mysql_url, LARGE, rows=12_345)
    assert not await create_large_table(mysql_url, LARGE, rows=12_345)

    url = schema_url(mysql_url, LARGE)
    assert await server_rows(url, "SELECT COUNT(*), MIN(id), MAX(id) FROM events") == [
        (12_345, 1, 12_345)
    ]
    await server_rows(mysql_url, f"DROP DATABASE {LARGE}")
