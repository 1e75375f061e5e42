"""The Home tab and the suggested prompts, through the fake Slack: an approver sees the
approvals waiting for them, everyone sees the databases and how to ask."""

from __future__ import annotations

import json

from bot.changes.types import PendingApproval
from bot.config import DatabaseConfig, Environment
from bot.slack.blocks.home import WaitingCard, home_view, suggested_prompts
from tests.fakes.model_server import call, calls
from tests.fakes.slack_server import published_views
from tests.fakes.slack_server import suggested_prompts as prompts_sent
from tests.slack.block_limits import assert_valid_view
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    CHANNEL,
    DM,
    PRODUCTION,
    STAGING,
    SlackHarness,
)

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


async def open_home(harness: SlackHarness, user: str) -> dict:
    await harness.send_event(
        {"type": "app_home_opened", "user": user, "channel": DM, "tab": "home", "event_ts": "1.1"}
    )
    return await harness.slack.wait_for(lambda: published_views(harness.slack).get(user))


def shown(view: dict) -> str:
    return json.dumps(view["blocks"], ensure_ascii=False)


async def test_everyone_sees_the_databases_and_how_to_ask(harness: SlackHarness) -> None:
    view = await open_home(harness, BYSTANDER)
    assert_valid_view(view)
    assert STAGING in shown(view) and PRODUCTION in shown(view)
    assert "staging" in shown(view) and "production" in shown(view)
    assert "@dbagent" in shown(view)
    assert "Waiting for your approval" not in shown(view)  # not an approver


async def test_an_approver_sees_the_cards_waiting_for_them_with_a_link_to_the_thread(
    harness: SlackHarness,
) -> None:
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    await harness.wait_for_card(thread_ts)
    view = await open_home(harness, APPROVER)
    assert_valid_view(view)
    text = shown(view)
    assert "Waiting for your approval" in text
    assert f"<@{ASKER}>" in text and "UPDATE orders SET status" in text and "just now" in text
    (link,) = [b["accessory"]["url"] for b in view["blocks"] if b.get("accessory", {}).get("url")]
    assert link == f"https://fake.slack.com/archives/{CHANNEL}/p{thread_ts.replace('.', '')}"


async def test_the_asker_does_not_see_their_own_request_as_waiting_for_them(
    harness: SlackHarness,
) -> None:
    harness.model.script(calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})))
    thread_ts, _ = await harness.mention("mark order 11 as paid", user=APPROVER)
    await harness.wait_for_card(thread_ts)
    view = await open_home(harness, APPROVER)
    assert "Nothing is waiting for your approval." in shown(view)


async def test_an_assistant_thread_starts_with_prompts_from_the_databases(
    harness: SlackHarness,
) -> None:
    await harness.send_event(
        {
            "type": "assistant_thread_started",
            "assistant_thread": {
                "user_id": ASKER,
                "context": {"channel_id": CHANNEL},
                "channel_id": DM,
                "thread_ts": "1729999327.187299",
            },
            "event_ts": "1.2",
        }
    )
    (sent,) = await harness.slack.wait_for(lambda: prompts_sent(harness.slack))
    assert sent["channel_id"] == DM and sent["thread_ts"] == "1729999327.187299"
    titles = [prompt["title"] for prompt in sent["prompts"]]
    assert f"What tables are on {STAGING}?" in titles and len(titles) <= 4


def pending(index: int) -> PendingApproval:
    return PendingApproval(
        id=f"p{index}",
        session_id=f"T:C{index}:17000000{index:02d}.000100",
        tool_call_id="c",
        database=STAGING,
        environment="staging",
        risk="write",
        sql=f"DELETE FROM orders WHERE id = {index} " + "AND status = 'x' " * 20,
        requester=ASKER,
        created_at=1_700_000_000 + index,
    )


def test_a_long_queue_shows_the_oldest_cards_and_counts_the_rest() -> None:
    databases = [
        DatabaseConfig(name=f"db{i}", url="mysql://u@h/d", environment=Environment.STAGING)
        for i in range(90)
    ]
    cards = [
        WaitingCard(pending(i), f"https://x.slack.com/archives/C{i}/p1", public=True)
        for i in range(40)
    ]
    view = home_view(databases, cards, now=1_700_003_600)
    assert_valid_view(view)  # 100 blocks at most, however many databases and cards
    text = shown(view)
    assert "…and 25 more waiting" in text
    assert "1 h ago" in text
    assert "DELETE FROM orders WHERE id = 0 " in text and "WHERE id = 39 " not in text


def test_suggested_prompts_fit_slack() -> None:
    databases = [
        DatabaseConfig(name=name, url="mysql://u@h/d", environment=Environment.STAGING)
        for name in ("a", "b", "c")
    ]
    prompts = suggested_prompts(databases)
    assert len(prompts) == 4 and all(p["title"] and p["message"] for p in prompts)
