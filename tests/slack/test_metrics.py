"""GET /metrics: a turn driven end to end moves the turn, model, tool, statement, approval and
Slack series by what happened — over HTTP, and on PORT in Socket Mode."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import Counter
from pathlib import Path

import aiohttp

from bot.config import DatabaseConfig, Limits, Settings
from bot.slack.server import serve
from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer, call, calls, failure, say
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BOT_TOKEN,
    CHANNEL,
    PRODUCTION,
    SCHEMA,
    STAGING,
    SlackHarness,
    run_sql,
)
from tests.slack.scrape import Scrape, scrape
from tests.waiting import until

PENDING = "SELECT id FROM orders WHERE status = 'pending'"
MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"


def slack_methods(slack: FakeSlack) -> Counter[str]:
    """The Web API calls Slack received, by method, and the files' uploads."""
    return Counter(c.method for c in slack.calls)


def assert_slack_series_moved(after: Scrape, before: Scrape, sent: Counter[str]) -> None:
    for method, count in sent.items():
        assert after.moved(before, "dbagent_slack_calls_total", method=method) == count, method


async def answered(harness: SlackHarness, thread_ts: str, text: str) -> None:
    await harness.slack.wait_for(lambda: any(text in t for t in harness.texts(thread_ts)))
    await harness.settled()


async def test_a_read_turn_moves_every_series_it_touches(harness: SlackHarness) -> None:
    before, sent_before = await scrape(harness.url), slack_methods(harness.slack)
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": PENDING})),
        say("Orders 11 and 12 are pending."),
    )
    thread_ts, _ = await harness.mention("which orders are pending?")
    await answered(harness, thread_ts, "Orders 11 and 12 are pending.")
    after = await scrape(harness.url)

    assert after.moved(before, "dbagent_turns_total", outcome="answer") == 1
    assert after.moved(before, "dbagent_turns_total") == 1
    assert after.moved(before, "dbagent_turn_duration_seconds_count") == 1
    # The first thing the person saw (the reaction on the question) was timed, once.
    assert after.moved(before, "dbagent_turn_first_progress_seconds_count") == 1
    assert after.moved(before, "dbagent_model_calls_total", result="ok") == 2
    assert after.moved(before, "dbagent_model_call_duration_seconds_count") == 2
    assert after.moved(before, "dbagent_model_errors_total") == 0
    session = await harness.agent.session(f"{TEAM_ID}:{CHANNEL}:{thread_ts}")
    assert session is not None
    assert after.moved(before, "dbagent_model_tokens_total") == session.tokens_used > 0
    assert after.moved(before, "dbagent_tool_calls_total", tool="execute_query", outcome="ok") == 1
    assert after.moved(before, "dbagent_tool_calls_total") == 1
    assert after.moved(before, "dbagent_statements_total", risk="read_only", decision="run") == 1
    assert after.moved(before, "dbagent_statements_total") == 1
    sent = slack_methods(harness.slack) - sent_before
    assert sent["chat.postMessage"] >= 1
    assert_slack_series_moved(after, before, sent)
    assert after.moved(before, "dbagent_slack_calls_total") == sum(sent.values())


async def test_an_approved_write_moves_the_approval_series(harness: SlackHarness) -> None:
    before = await scrape(harness.url)
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": MARK_PAID})),
        say("Order 11 is now paid."),
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    waiting = await scrape(harness.url)
    assert waiting.moved(before, "dbagent_statements_total", risk="write", decision="approval") == 1
    assert waiting.moved(before, "dbagent_turns_total", outcome="awaiting_approval") == 1
    assert waiting.moved(before, "dbagent_tool_calls_total", outcome="approval") == 1
    assert waiting.value("dbagent_approvals_pending") == 1
    assert waiting.value("dbagent_approvals_oldest_pending_seconds") >= 0

    await harness.click("approve_once", card, user=APPROVER)
    await answered(harness, thread_ts, "Order 11 is now paid.")
    after = await scrape(harness.url)
    assert after.moved(waiting, "dbagent_approvals_decided_total", outcome="approved") == 1
    assert after.moved(waiting, "dbagent_statements_total", risk="write", decision="run") == 1
    assert after.moved(waiting, "dbagent_turns_total", outcome="answer") == 1
    assert after.value("dbagent_approvals_pending") == 0
    assert after.value("dbagent_approvals_oldest_pending_seconds") == 0


async def test_a_refused_write_is_counted_with_its_reason_class(harness: SlackHarness) -> None:
    before = await scrape(harness.url)
    harness.model.script(
        calls(call("execute_query", {"database": PRODUCTION, "sql": MARK_PAID})),
        say("Production is not written; here is the SQL."),
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid in production")
    await answered(harness, thread_ts, "Production is not written")
    after = await scrape(harness.url)
    refused = {"risk": "write", "decision": "refused", "reason": "production_write"}
    assert after.moved(before, "dbagent_statements_total", **refused) == 1
    assert after.moved(before, "dbagent_tool_calls_total", outcome="blocked") == 1
    assert after.moved(before, "dbagent_approvals_pending") == 0


async def test_a_model_failure_and_a_slack_429_are_counted(harness: SlackHarness) -> None:
    before = await scrape(harness.url)
    harness.slack.rate_limit_next("chat.postMessage")
    harness.model.script(failure(500, "the model is down"))
    thread_ts, _ = await harness.mention("anything")
    await answered(harness, thread_ts, "the model is down")
    after = await scrape(harness.url)
    assert after.moved(before, "dbagent_model_errors_total", status="500") == 1
    assert after.moved(before, "dbagent_model_calls_total", result="error") == 1
    assert after.moved(before, "dbagent_turns_total", outcome="failed") == 1
    rate_limited = {"method": "chat.postMessage", "result": "429"}
    assert after.moved(before, "dbagent_slack_calls_total", **rate_limited) == 1


# -- Socket Mode -----------------------------------------------------------------------------


def socket_settings(slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path):
    return Settings(
        slack_bot_token=BOT_TOKEN,
        slack_signing_secret=None,
        slack_app_token="xapp-1-test",
        slack_api_url=slack.api_url,
        openai_base_url=model.url,
        openai_api_key="test-key",
        databases=[DatabaseConfig(name=STAGING, url=shop_url, environment="staging")],
        limits=Limits(model_max_retries=0),
        dbagent_state_dir=tmp_path / "state",
        port=free_port(),
    )


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return response.status, await response.text()


async def test_socket_mode_serves_health_and_metrics_on_port(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    settings = socket_settings(slack, model, shop_url, tmp_path)
    base = f"http://127.0.0.1:{settings.port}"
    task = asyncio.create_task(serve(settings))
    try:
        await slack.wait_for(lambda: slack.sockets or task.done())
        assert not task.done(), task.exception()
        status, health = await get(f"{base}/health")
        assert status == 200 and '"ok": true' in health
        before, sent_before = await scrape(base), slack_methods(slack)
        model.script(
            calls(call("execute_query", {"database": STAGING, "sql": PENDING})),
            say("Two orders are pending."),
        )
        ts = "1800000100.000100"
        event = {
            "type": "app_mention",
            "user": ASKER,
            "text": f"<@{BOT_USER_ID}> which orders are pending?",
            "ts": ts,
            "channel": CHANNEL,
        }
        await slack.push(
            "events_api",
            {"type": "event_callback", "team_id": TEAM_ID, "event_id": "EvSocket1", "event": event},
        )
        await slack.wait_for(lambda: any("Two orders" in m.text for m in slack.thread(CHANNEL, ts)))
        # The turn's last Slack calls follow its answer: wait until every call Slack
        # received is counted, and compare that scrape with those calls.
        seen: list[tuple[Scrape, Counter[str]]] = []

        async def all_counted() -> bool:
            sent = slack_methods(slack) - sent_before
            seen.append((await scrape(base), sent))
            return seen[-1][0].moved(before, "dbagent_slack_calls_total") == sum(sent.values())

        await until(all_counted)
        after, sent = seen[-1]
        assert after.moved(before, "dbagent_turns_total", outcome="answer") == 1
        assert after.moved(before, "dbagent_model_calls_total", result="ok") == 2
        assert after.moved(before, "dbagent_tool_calls_total", tool="execute_query") == 1
        assert after.moved(before, "dbagent_statements_total", decision="run") == 1
        assert_slack_series_moved(after, before, sent)
    finally:
        os.kill(os.getpid(), signal.SIGTERM)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, 20)


async def test_a_change_rolled_back_past_its_bounds_is_counted(harness: SlackHarness) -> None:
    cancel_pending = "UPDATE orders SET status = 'cancelled' WHERE status = 'pending'"
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": cancel_pending})),
        say("Done, or not."),
    )
    thread_ts, _ = await harness.mention("cancel the pending orders")
    card = await harness.wait_for_card(thread_ts)  # it says 2 rows
    before = await scrape(harness.url)
    # A third pending order arrives before the click: the change would touch 3 rows.
    await run_sql(
        harness.shop_url, [f"INSERT INTO {SCHEMA}.orders VALUES (14, 'Eve', 'pending', 1)"]
    )
    await harness.click("approve_once", card, user=APPROVER)
    await answered(harness, thread_ts, "Done, or not.")
    after = await scrape(harness.url)
    assert after.moved(before, "dbagent_bounded_rollbacks_total") == 1
    assert after.moved(before, "dbagent_statements_total", risk="write", decision="error") == 1
    assert after.moved(before, "dbagent_approvals_decided_total", outcome="approved") == 1
    pending = f"SELECT COUNT(*) FROM {SCHEMA}.orders WHERE status = 'pending'"
    assert await run_sql(harness.shop_url, [pending]) == [(3,)]  # nothing was changed
