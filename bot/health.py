"""What GET /health answers, wherever it is served (HTTP mode's server, and any other
server on PORT): one function, so every way of serving tells the same truth.

503 while the state store cannot be used now (asked at most once a second: see
bot/state/probe.py), so a load balancer drains a replica that would drop events and
sends it traffic again within seconds of the store coming back, with no traffic needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.state import State

Report = tuple[int, dict[str, Any]]


async def health_report(state: State, unreachable_channels: Mapping[str, str]) -> Report:
    """(HTTP status, JSON body): 200 when the store is usable now, else 503 and why; the
    channels Slack says the bot cannot reach either way."""
    slack = {"unreachable_channels": dict(unreachable_channels)}
    problem = await state.problem()
    if problem is not None:
        return 503, {"ok": False, "state": problem, "slack": slack}
    return 200, {"ok": True, "slack": slack}
