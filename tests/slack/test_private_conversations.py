"""Through Slack's real entry point: the bot's surfaces outside a thread (the audit channel,
App Home) show a change's SQL only when it was asked in a public channel. For a private
channel they name the database, the row count, the requester and a link to the card."""

from __future__ import annotations

import json

import pytest

from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import published_views
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    AUDIT_CHANNEL,
    CHANNEL,
    DM,
    PRIVATE_CHANNEL,
    STAGING,
    SlackHarness,
)

# A literal someone would not want read outside the conversation it was asked in.
SECRET = "Ada Lovelace, 12 Private Lane"
CHANGE = f"UPDATE orders SET customer = '{SECRET}' WHERE id = 10"


async def ask_for_the_change(harness: SlackHarness, channel: str) -> str:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": CHANGE})), say("Changed.")
    )
    thread_ts, _ = await harness.mention("set order 10's customer", channel=channel)
    await harness.wait_for_card(thread_ts, channel)
    return thread_ts


async def home_of(harness: SlackHarness, user: str) -> str:
    await harness.send_event(
        {"type": "app_home_opened", "user": user, "channel": DM, "tab": "home", "event_ts": "1.1"}
    )
    view = await harness.slack.wait_for(lambda: published_views(harness.slack).get(user))
    return json.dumps(view["blocks"], ensure_ascii=False)


def audit_lines(harness: SlackHarness) -> list[str]:
    return [m.text for m in harness.slack.messages if m.channel == AUDIT_CHANNEL]


# (channel, a fault of conversations.info, why it is private)
PRIVATE = [
    (PRIVATE_CHANNEL, "", "conversations.info says is_private"),
    ("G0OLDGROUP", "", "an old-style private channel (G…), known without asking"),
    ("C0UNKNOWN", "missing_scope", "Slack cannot say (no channels:read): private, fail closed"),
]


@pytest.mark.parametrize(("channel", "fault", "why"), PRIVATE, ids=[why for *_, why in PRIVATE])
async def test_a_change_asked_in_a_private_channel_shows_no_sql_outside_it(
    harness: SlackHarness, channel: str, fault: str, why: str
) -> None:
    if fault:
        harness.slack.fail_next("conversations.info", fault, times=10)
    thread_ts = await ask_for_the_change(harness, channel)
    card_link = f"https://fake.slack.com/archives/{channel}/p"
    (posted,) = await harness.slack.wait_for(lambda: audit_lines(harness))
    for part in (f"<@{ASKER}>", STAGING, "1 row", card_link, "private conversation"):
        assert part in posted, part
    assert SECRET not in posted and "UPDATE" not in posted

    home = await home_of(harness, APPROVER)
    assert STAGING in home and f"<@{ASKER}>" in home and "private conversation" in home
    assert SECRET not in home and "UPDATE" not in home

    card = await harness.wait_for_card(thread_ts, channel)
    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: len(audit_lines(harness)) == 2)
    ran = audit_lines(harness)[1]
    for part in (f"<@{ASKER}>", f"<@{APPROVER}>", STAGING, "1 row", card_link):
        assert part in ran, part
    assert SECRET not in ran and "UPDATE" not in ran
    await harness.idle()


async def test_a_change_asked_in_a_public_channel_shows_its_sql(harness: SlackHarness) -> None:
    thread_ts = await ask_for_the_change(harness, CHANNEL)
    (posted,) = await harness.slack.wait_for(lambda: audit_lines(harness))
    assert SECRET in posted and "UPDATE orders" in posted
    assert SECRET in await home_of(harness, APPROVER)
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: len(audit_lines(harness)) == 2)
    assert SECRET in audit_lines(harness)[1]
    await harness.idle()
