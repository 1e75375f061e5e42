"""execute_query: classify → guard → grant → run, rows cut after fetching, every statement
audited."""

from __future__ import annotations

import json

from bot.agent.tools import ApprovalRequired, ToolContext
from bot.state.grants import GrantScope
from tests.agent.support import PRODUCTION, SESSION, STAGING, call_tool, query, reply_of

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"


async def audit_outcomes(context: ToolContext) -> list[tuple[str, str]]:
    return [(r["outcome"], r["sql"]) for r in await context.audit.since(None)]


async def test_a_select_returns_fifty_rows_by_default_with_an_exact_truncated_flag(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context, "execute_query", {"database": STAGING, "sql": "SELECT id FROM events"}
    )
    answer = json.loads(reply.content)
    assert (answer["row_count"], answer["truncated"]) == (50, True)
    assert answer["rows"][:2] == [[1], [2]]


async def test_a_result_that_fits_the_limit_exactly_is_not_marked_truncated(
    tool_context: ToolContext,
) -> None:
    sql = "SELECT id FROM events WHERE id <= 7"
    reply = await reply_of(
        tool_context, "execute_query", {"database": STAGING, "sql": sql, "limit": 7}
    )
    answer = json.loads(reply.content)
    assert (answer["row_count"], answer["truncated"]) == (7, False)
    assert reply.result is not None and reply.result.sql == sql
    assert reply.summary == "7 rows returned"


async def test_the_sql_is_never_rewritten_to_add_a_limit(tool_context: ToolContext) -> None:
    sql = "SELECT COUNT(*) AS n FROM events"
    await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": sql, "limit": 3})
    (record,) = await tool_context.audit.since(None)
    assert record["sql"] == sql


async def test_a_limit_above_the_maximum_is_capped_and_the_cap_is_noted(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context,
        "execute_query",
        {"database": STAGING, "sql": "SELECT id FROM events", "limit": 5000},
    )
    answer = json.loads(reply.content)
    assert answer["row_count"] == 1000
    assert answer["note"] == "limit capped at 1000 rows"


async def test_a_write_without_a_grant_asks_for_approval_and_does_not_run(
    tool_context: ToolContext, shop_url: str
) -> None:
    outcome = await call_tool(
        tool_context, "execute_query", {"database": STAGING, "sql": CANCEL_11}
    )
    assert isinstance(outcome, ApprovalRequired)
    assert (outcome.database, outcome.environment, outcome.risk) == (STAGING, "staging", "write")
    assert await query(shop_url, "SELECT status FROM orders WHERE id = 11") == [("pending",)]
    assert await audit_outcomes(tool_context) == [("awaiting_approval", CANCEL_11)]


async def test_a_write_with_a_matching_grant_runs_and_reports_affected_rows(
    tool_context: ToolContext, shop_url: str
) -> None:
    await tool_context.grants.mint(SESSION, STAGING, CANCEL_11, GrantScope.ONCE, "U0APPROVE")
    reply = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": CANCEL_11})
    assert json.loads(reply.content) == {"affected_rows": 1}
    assert reply.summary == "1 row affected"
    assert await query(shop_url, "SELECT status FROM orders WHERE id = 11") == [("cancelled",)]
    # The once-grant is spent: the same text asks again.
    again = await call_tool(tool_context, "execute_query", {"database": STAGING, "sql": CANCEL_11})
    assert isinstance(again, ApprovalRequired)


async def test_a_production_write_is_refused_without_asking_anyone(
    tool_context: ToolContext, shop_url: str
) -> None:
    reply = await reply_of(
        tool_context, "execute_query", {"database": PRODUCTION, "sql": CANCEL_11}
    )
    assert reply.content.startswith("Blocked: writes on production")
    assert await query(shop_url, "SELECT status FROM orders WHERE id = 11") == [("pending",)]
    (record,) = await tool_context.audit.since(None)
    assert (record["outcome"], record["environment"]) == ("refused", "production")


async def test_a_transaction_is_refused(tool_context: ToolContext) -> None:
    sql = f"BEGIN; {CANCEL_11}; COMMIT"
    reply = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert reply.content.startswith("Blocked: transaction control")


async def test_a_database_error_comes_back_as_an_error_result_and_is_audited(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context, "execute_query", {"database": STAGING, "sql": "SELECT nope FROM orders"}
    )
    assert reply.content.startswith("Error: ")
    assert "nope" in reply.content
    (record,) = await tool_context.audit.since(None)
    assert record["outcome"] == "error" and "nope" in record["error"]


async def test_every_executed_statement_is_audited_with_requester_rows_and_duration(
    tool_context: ToolContext,
) -> None:
    sql = "SELECT id FROM orders WHERE id < 12; SELECT id FROM customers"
    reply = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert json.loads(reply.content)["columns"] == ["id"]
    records = await tool_context.audit.since(None)
    assert [(r["outcome"], r["rows"]) for r in records] == [("executed", 2), ("executed", 3)]
    assert all(r["requester"] == "U0REQUEST" and r["duration_ms"] >= 0 for r in records)
    assert records[0]["risk"] == "read_only"


async def test_sql_over_the_size_limit_is_refused_before_anything_else(
    tool_context: ToolContext,
) -> None:
    limit = tool_context.settings.limits.max_sql_chars
    sql = "SELECT 1" + " " * limit
    reply = await reply_of(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert reply.content.startswith("Error: the SQL is ")
    assert f"the limit is {limit:,}" in reply.content
    assert await audit_outcomes(tool_context) == []


async def test_a_long_script_is_classified_off_the_event_loop_and_judged_as_a_whole(
    tool_context: ToolContext,
) -> None:
    sql = "SELECT id FROM events WHERE id = 1;\n" * 300 + CANCEL_11
    outcome = await call_tool(tool_context, "execute_query", {"database": STAGING, "sql": sql})
    assert isinstance(outcome, ApprovalRequired), "one write among 300 reads needs approval"
    assert outcome.risk == "write"
