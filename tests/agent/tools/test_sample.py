"""get_sample_data: default 20 rows, at most 100, with an exact truncated flag."""

from __future__ import annotations

import json

from bot.agent.tools import ToolContext
from tests.agent.support import STAGING, reply_of


async def test_a_sample_has_twenty_rows_by_default_and_says_more_exist(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context, "get_sample_data", {"database": STAGING, "table": "events"}
    )
    answer = json.loads(reply.content)
    assert answer["columns"] == ["id", "payload"]
    assert (answer["row_count"], answer["truncated"]) == (20, True)
    assert reply.result is not None and len(reply.result.rows) == 20


async def test_a_sample_limit_above_the_maximum_is_capped_and_the_cap_is_noted(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context, "get_sample_data", {"database": STAGING, "table": "events", "limit": 5000}
    )
    answer = json.loads(reply.content)
    assert answer["row_count"] == 100
    assert answer["note"] == "limit capped at 100 rows"


async def test_a_small_table_is_sampled_whole_and_not_marked_truncated(
    tool_context: ToolContext,
) -> None:
    reply = await reply_of(
        tool_context, "get_sample_data", {"database": STAGING, "table": "customers"}
    )
    answer = json.loads(reply.content)
    assert (answer["row_count"], answer["truncated"]) == (3, False)
