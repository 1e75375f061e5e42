"""get_skill: the list, one guide, or the names when the name is wrong."""

from __future__ import annotations

import json

from bot.agent.tools import ToolContext
from tests.agent.support import reply_of


async def test_without_a_name_it_lists_the_skills(tool_context: ToolContext) -> None:
    listing = json.loads((await reply_of(tool_context, "get_skill")).content)["skills"]
    assert {"query", "slow-query", "data-fix"} <= {s["name"] for s in listing}


async def test_with_a_name_it_returns_the_guide(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_skill", {"name": "data-fix"})
    assert "preview" in reply.content.lower()


async def test_an_unknown_name_is_an_error_listing_the_names(tool_context: ToolContext) -> None:
    reply = await reply_of(tool_context, "get_skill", {"name": "backup"})
    assert reply.content.startswith("Error: unknown skill 'backup'; skills: ")
    assert "slow-query" in reply.content
