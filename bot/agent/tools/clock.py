"""get_current_time: the requester's local time (their Slack profile's time zone) and UTC."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.agent.tools.base import BOTH_MODES, Parameters, Tool, ToolContext, ToolReply, dumps


class NoParameters(Parameters):
    pass


async def get_current_time(context: ToolContext, _: NoParameters) -> ToolReply:
    now = datetime.now(UTC)
    name = context.requester.timezone or "UTC"
    note = None
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        zone, note = ZoneInfo("UTC"), f"unknown time zone {name!r}; showing UTC"
        name = "UTC"
    local = now.astimezone(zone)
    answer = {
        "local_time": local.isoformat(timespec="seconds"),
        "time_zone": name,
        "utc_offset": local.strftime("%z"),
        "weekday": local.strftime("%A"),
        "utc_time": now.isoformat(timespec="seconds"),
    }
    if note:
        answer["note"] = note
    return ToolReply(dumps(answer))


CLOCK_TOOLS = (
    Tool(
        name="get_current_time",
        description=(
            "The requester's current local time and time zone, and the time in UTC. Use it "
            "to turn 'today' or 'last week' into dates."
        ),
        parameters=NoParameters,
        handler=get_current_time,
        modes=BOTH_MODES,
    ),
)
