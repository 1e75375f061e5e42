"""DBAGENT_LOG_FORMAT=json: one JSON object per line, and every line a turn logs carries its
session and Slack event ids — not another turn's."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot.observability import logs
from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import TEAM_ID
from tests.slack.conftest import CHANNEL, STAGING, SlackHarness


@pytest.fixture
def json_lines() -> Iterator[io.StringIO]:
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    logs.use_json(handler)
    root, bot = logging.getLogger(), logging.getLogger("bot")
    level = bot.level
    root.addHandler(handler)
    bot.setLevel(logging.DEBUG)
    try:
        yield written
    finally:
        root.removeHandler(handler)
        bot.setLevel(level)


async def test_every_line_of_a_turn_names_its_session_and_event(
    harness: SlackHarness, json_lines: io.StringIO
) -> None:
    # Two turns at once, in two threads; Slack refuses their first posts, which they log.
    harness.slack.fail_next("chat.postMessage", "invalid_blocks", times=2)
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": "SELECT 1"})),
        calls(call("execute_query", {"database": STAGING, "sql": "SELECT 2"})),
        say("First done."),
        say("Second done."),
    )
    first, _ = await harness.mention("the first question", event_id="EvFirst")
    second, _ = await harness.mention("the second question", event_id="EvSecond")
    await harness.slack.wait_for(lambda: harness.texts(first) and harness.texts(second))
    await harness.settled()

    lines = [json.loads(line) for line in json_lines.getvalue().splitlines()]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    events = {
        f"{TEAM_ID}:{CHANNEL}:{first}": "EvFirst",
        f"{TEAM_ID}:{CHANNEL}:{second}": "EvSecond",
    }
    in_turns = [line for line in lines if "session_id" in line]
    assert {line["session_id"] for line in in_turns} == set(events)
    assert any(line["logger"] == "bot.slack.delivery" for line in in_turns)
    for line in in_turns:
        assert line["event_id"] == events[line["session_id"]], line
