"""explain_query: EXPLAIN FORMAT=JSON of read-only statements only."""

from __future__ import annotations

import json

from bot.agent.tools import ToolContext
from tests.agent.support import STAGING, reply_of


async def test_a_select_is_explained_as_a_json_plan(tool_context: ToolContext) -> None:
    sql = "SELECT * FROM orders WHERE customer_id = 1"
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    answer = json.loads(reply.content)
    assert answer["database"] == STAGING
    assert "query_block" in answer["plan"]


async def test_a_write_is_not_explained(tool_context: ToolContext) -> None:
    sql = "DELETE FROM orders WHERE id = 10"
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    assert reply.content.startswith("Blocked: explain_query explains read-only statements only")


async def test_explain_analyze_is_never_run(tool_context: ToolContext) -> None:
    sql = "ANALYZE SELECT * FROM orders"
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    assert reply.content.startswith(("Blocked:", "Error:"))


async def test_two_statements_are_explained_one_at_a_time(tool_context: ToolContext) -> None:
    sql = "SELECT 1; SELECT 2"
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    assert reply.content == (
        "Error: explain_query takes exactly one statement; send them one at a time."
    )
