"""list_databases, list_tables, get_columns on the real database, as compact tables."""

from __future__ import annotations

import json

from bot.agent.tools import ToolContext
from tests.agent.support import PRODUCTION, STAGING, reply_of


async def test_list_databases_gives_name_environment_description_and_version(
    tool_context: ToolContext,
) -> None:
    answer = json.loads((await reply_of(tool_context, "list_databases")).content)
    assert answer["columns"] == ["name", "environment", "description", "version"]
    rows = {row[0]: row for row in answer["rows"]}
    assert rows[STAGING][1:3] == ["staging", "Orders and customers, staging copy"]
    assert rows[PRODUCTION][1] == "production"
    assert "MariaDB" in rows[STAGING][3]
    assert (answer["row_count"], answer["truncated"]) == (2, False)


async def test_list_tables_answers_with_columns_and_rows_of_arrays(
    tool_context: ToolContext,
) -> None:
    answer = json.loads(
        (await reply_of(tool_context, "list_tables", {"database": STAGING})).content
    )
    assert answer["columns"] == ["name", "type", "estimated_rows", "comment"]
    assert all(isinstance(row, list) for row in answer["rows"])
    by_name = {row[0]: row for row in answer["rows"]}
    assert by_name["orders"][1] == "table"
    assert by_name["orders"][3] == "one row per order"


async def test_get_columns_gives_the_columns_and_the_indexes(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_columns", {"database": STAGING, "table": "orders"})
    answer = json.loads(reply.content)
    names = [row[0] for row in answer["columns"]["rows"]]
    assert names == ["id", "customer_id", "status", "total"]
    indexes = {row[0]: row[1] for row in answer["indexes"]["rows"]}
    assert indexes == {"PRIMARY": "id", "idx_orders_customer": "customer_id"}


async def test_an_unknown_database_is_an_error_naming_the_closest(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(tool_context, "list_tables", {"database": "shop-stagin"})
    assert reply.content.startswith("Error: unknown database 'shop-stagin'")
    assert STAGING in reply.content


async def test_an_unknown_table_is_an_error_not_an_exception(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_columns", {"database": STAGING, "table": "order"})
    assert reply.content.startswith("Error: unknown table 'order'")
