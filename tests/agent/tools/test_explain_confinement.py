"""explain_query stays inside the database like execute_query: a plan tells what another
schema holds (its tables, their sizes), and the optimizer evaluates constant subqueries
while planning, so "Impossible WHERE" or not answers a yes/no question about their rows."""

from __future__ import annotations

import pytest

from bot.agent.tools import ToolContext
from tests.agent.support import STAGING, reply_of

OUTSIDE = [
    ("SELECT * FROM mysql.user", "the plan of another schema's table"),
    (
        "SELECT * FROM orders WHERE id = 10 AND (SELECT COUNT(*) FROM mysql.user) > 1",
        "a constant subquery on another schema, answered by the plan",
    ),
    ("SELECT * FROM performance_schema.threads", "performance_schema is another schema"),
]


@pytest.mark.parametrize(("sql", "why"), OUTSIDE, ids=[why for _, why in OUTSIDE])
async def test_a_plan_of_what_lies_outside_the_database_is_refused(
    tool_context: ToolContext, sql: str, why: str
) -> None:
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    assert reply.content.startswith("Blocked: the statement reads"), why


async def test_a_plan_inside_the_database_is_still_given(tool_context: ToolContext) -> None:
    sql = "SELECT * FROM orders WHERE id = 10 AND (SELECT COUNT(*) FROM customers) > 1"
    reply = await reply_of(tool_context, "explain_query", {"database": STAGING, "sql": sql})
    assert '"query_block"' in reply.content
