"""get_current_time: the requester's zone, and UTC."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

from bot.agent.outcomes import Requester
from bot.agent.tools import ToolContext
from tests.agent.support import reply_of


async def test_the_time_is_given_in_the_requesters_zone_and_in_utc(
    tool_context: ToolContext,
) -> None:
    answer = json.loads((await reply_of(tool_context, "get_current_time")).content)
    assert answer["time_zone"] == "Europe/Berlin"
    local = datetime.fromisoformat(answer["local_time"])
    utc = datetime.fromisoformat(answer["utc_time"])
    assert local.utcoffset() is not None and local.utcoffset().total_seconds() in (3600, 7200)
    assert abs((local - utc).total_seconds()) < 2
    assert answer["weekday"] == local.strftime("%A")


async def test_an_unknown_zone_falls_back_to_utc_and_says_so(tool_context: ToolContext) -> None:
    context = dataclasses.replace(tool_context, requester=Requester("U1", timezone="Mars/Olympus"))
    answer = json.loads((await reply_of(context, "get_current_time")).content)
    assert answer["time_zone"] == "UTC"
    assert "unknown time zone 'Mars/Olympus'" in answer["note"]
