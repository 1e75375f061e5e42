"""Catalog reads for the tools: tables, columns and indexes, samples, EXPLAIN."""

from __future__ import annotations

import json

import pytest

from bot.db import Database, DbError, UnknownObject
from bot.db.names import quote_identifier
from tests.db.support import SHOP_SCHEMA, server_rows


async def test_server_version_is_the_servers_own(shop: Database) -> None:
    assert "MariaDB" in await shop.server_version()


async def test_list_tables_shows_tables_and_views_with_rows_and_comments(shop: Database) -> None:
    tables = await shop.list_tables()

    assert tables.columns == ("name", "type", "estimated_rows", "comment")
    by_name = {row[0]: row for row in tables.rows}
    assert sorted(by_name) == [
        "customer_order_counts",
        "customers",
        "order_items",
        "orders",
        "products",
    ]
    _, kind, estimated_rows, comment = by_name["customers"]
    assert (kind, comment) == ("table", "People who can place orders")
    assert isinstance(estimated_rows, int) and 800 <= estimated_rows <= 1200  # InnoDB estimates
    assert by_name["customer_order_counts"][1:] == ("view", None, "")


async def test_get_columns_gives_full_definitions(shop: Database) -> None:
    columns, _ = await shop.get_columns("orders")

    assert columns.columns == ("name", "type", "nullable", "default", "key", "extra", "comment")
    assert columns.rows == (
        ("id", "int(10) unsigned", False, None, "PRI", "auto_increment", ""),
        ("customer_id", "int(10) unsigned", False, None, "MUL", "", ""),
        ("status", "enum('pending','paid','shipped','cancelled')", False, "'pending'", "", "", ""),
        ("total", "decimal(12,2)", False, None, "", "", ""),
        ("created_at", "datetime", False, None, "MUL", "", ""),
    )


async def test_get_columns_gives_indexes_primary_first(shop: Database) -> None:
    _, indexes = await shop.get_columns("customers")

    assert indexes.columns == ("name", "columns", "unique", "type")
    assert indexes.rows == (
        ("PRIMARY", "id", True, "BTREE"),
        ("ix_customers_country", "country", False, "BTREE"),
        ("uq_customers_email", "email", True, "BTREE"),
    )


async def test_column_comments_are_shown(shop: Database) -> None:
    columns, _ = await shop.get_columns("order_items")

    comments = {row[0]: row[6] for row in columns.rows}
    assert comments["unit_price"] == "price when ordered"


@pytest.mark.parametrize(
    "spelling",
    ["orders", "ORDERS", "`orders`", f"{SHOP_SCHEMA}.orders"],
    ids=["exact", "other case", "backticked", "schema-qualified"],
)
async def test_a_table_is_found_under_its_usual_spellings(shop: Database, spelling: str) -> None:
    columns, _ = await shop.get_columns(spelling)

    assert columns.rows[0][0] == "id"


async def test_an_unknown_table_names_the_closest_ones(shop: Database) -> None:
    with pytest.raises(UnknownObject) as unknown:
        await shop.get_columns("ordrs")

    assert unknown.value.message == "unknown table 'ordrs'; closest: orders, order_items"


async def test_sample_returns_the_rows_asked_for_and_says_there_are_more(shop: Database) -> None:
    sample = await shop.sample("customers", 5)

    assert sample.columns == ("id", "email", "name", "country", "created_at")
    assert sample.row_count == 5
    assert sample.truncated


async def test_sample_is_capped_at_the_maximum(shop: Database) -> None:
    sample = await shop.sample("customers", 1_000)

    assert sample.row_count == 100
    assert sample.truncated


async def test_a_sample_of_a_small_table_is_not_truncated(scratch: Database) -> None:
    await scratch.execute(
        ["CREATE TABLE tiny (id INT)", "INSERT INTO tiny VALUES (1), (2), (3)"],
        read_only=False,
        limit=1,
    )

    sample = await scratch.sample("tiny", 20)

    assert sample.rows == ((1,), (2,), (3,))
    assert not sample.truncated


async def test_table_names_cannot_inject_sql(scratch: Database, scratch_url: str) -> None:
    weird = "we`ird; DROP TABLE victim; --"
    await scratch.execute(
        [
            "CREATE TABLE victim (id INT)",
            f"CREATE TABLE {quote_identifier(weird)} (id INT)",
            f"INSERT INTO {quote_identifier(weird)} VALUES (7)",
        ],
        read_only=False,
        limit=1,
    )

    sample = await scratch.sample(weird, 10)
    with pytest.raises(UnknownObject):
        await scratch.sample("victim`; DROP TABLE victim; --", 10)

    assert sample.rows == ((7,),)
    assert await server_rows(scratch_url, "SHOW TABLES LIKE 'victim'") == [("victim",)]


async def test_explain_returns_the_json_plan(shop: Database) -> None:
    plan = await shop.explain("SELECT * FROM orders WHERE customer_id = 3")

    table = json.loads(plan)["query_block"]["nested_loop"][0]["table"]
    assert table["table_name"] == "orders"
    assert table["key"] == "ix_orders_customer"


# (sql, refusal, why)
NOT_EXPLAINED = [
    ("ANALYZE SELECT * FROM orders", "never runs ANALYZE", "ANALYZE executes the statement"),
    ("  /* why not */ analyze SELECT 1", "never runs ANALYZE", "hidden behind a comment"),
    ("/*!ANALYZE*/ SELECT 1", "executable comment", "hidden in an executable comment"),
    ("EXPLAIN SELECT 1", "pass the statement itself", "EXPLAIN is added by us"),
    ("DELETE FROM orders", "READ ONLY", "plans of writes are refused by the read-only session"),
    ("SELECT 1; DROP TABLE orders", "error 1064", "one statement only"),
]


@pytest.mark.parametrize(
    ("sql", "refusal", "reason"), NOT_EXPLAINED, ids=[r[2] for r in NOT_EXPLAINED]
)
async def test_explain_refuses(shop: Database, sql: str, refusal: str, reason: str) -> None:
    with pytest.raises(DbError) as refused:
        await shop.explain(sql)

    assert refusal in refused.value.message
