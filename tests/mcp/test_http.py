"""An MCP client over Streamable HTTP at /mcp on the bot's own port: the same guarded tools
as the agent, writes as approval cards in the approval channel, 401 for a bad token."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import TEAM_ID, FakeSlack, Message, refuse_block_id
from tests.mcp.support import (
    ALICE_TOKEN,
    APPROVAL_CHANNEL,
    CLIENT_NAME,
    OTHER_TOKEN,
    http_session,
    json_of,
    text_of,
    with_mcp,
)
from tests.slack.conftest import (
    APPROVER,
    AUDIT_CHANNEL,
    BYSTANDER,
    GROUP,
    GROUP_MEMBER,
    PRODUCTION,
    SCHEMA,
    STAGING,
    SlackHarness,
    run_sql,
)

ALICE = APPROVER  # the person the client acts for: an approver, but not of her own change
OTHER_APPROVER = GROUP_MEMBER
UPDATE = "UPDATE orders SET status = 'cancelled' WHERE id = 12"


@pytest.fixture
async def bot(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
    harness.settings = with_mcp(harness.settings, ALICE)
    await harness.start()
    yield harness
    await harness.stop()


def mcp_url(bot: SlackHarness) -> str:
    return f"{bot.url}/mcp"


def cards_in_channel(bot: SlackHarness) -> list[Message]:
    """Every approval card posted in the approval channel, decided or not."""
    return [
        message
        for message in bot.slack.messages
        if message.channel == APPROVAL_CHANNEL
        and message.text.startswith(("Approval needed", "Approved", "Denied"))
    ]


async def status_of_order(bot: SlackHarness, order: int) -> str:
    rows = await run_sql(bot.shop_url, [f"SELECT status FROM {SCHEMA}.orders WHERE id = {order}"])
    return str(rows[0][0])


async def test_the_tools_are_the_agents_by_name_plus_get_proposal(bot: SlackHarness) -> None:
    async with http_session(mcp_url(bot)) as session:
        listed = await session.list_tools()
    names = {tool.name for tool in listed.tools}
    assert names == {
        "list_databases",
        "list_tables",
        "get_columns",
        "get_current_time",
        "get_sample_data",
        "explain_query",
        "execute_query",
        "get_proposal",
    }
    execute = next(tool for tool in listed.tools if tool.name == "execute_query")
    assert {"database", "sql", "limit", "chart"} <= set(execute.input_schema["properties"])


async def test_reads_return_rows_through_the_guard(bot: SlackHarness) -> None:
    async with http_session(mcp_url(bot)) as session:
        databases = json_of(await session.call_tool("list_databases", {}))
        rows = json_of(
            await session.call_tool(
                "execute_query",
                {"database": STAGING, "sql": "SELECT id, status FROM orders ORDER BY id"},
            )
        )
        sample = json_of(
            await session.call_tool("get_sample_data", {"database": STAGING, "table": "orders"})
        )
    assert STAGING in str(databases)
    assert rows["rows"] == [[10, "paid"], [11, "pending"], [12, "pending"], [13, "shipped"]]
    assert sample["row_count"] == 4
    # Nothing was posted for a read; the audit log names where it came from.
    assert cards_in_channel(bot) == []
    assert bot.state is not None
    records = await bot.state.audit.since(None)
    assert [r.get("origin") for r in records if r["outcome"] == "executed"] == [
        f"mcp:{CLIENT_NAME}"
    ]


@pytest.mark.parametrize(
    ("database", "sql", "why"),
    [
        (PRODUCTION, UPDATE, "production is never written"),
        (STAGING, "COMMIT", "transaction control is refused"),
        (STAGING, "SET GLOBAL max_connections = 10", "admin statements are refused"),
        (STAGING, "SELECT SLEEP(0) FROM orders FOR UPDATE; COMMIT", "a lock with a commit"),
    ],
)
async def test_what_slack_refuses_is_refused_with_no_card(
    bot: SlackHarness, database: str, sql: str, why: str
) -> None:
    async with http_session(mcp_url(bot)) as session:
        result = await session.call_tool("execute_query", {"database": database, "sql": sql})
    assert result.is_error, why
    assert text_of(result).startswith(("Blocked:", "Error:")), why
    assert cards_in_channel(bot) == [], why
    assert await status_of_order(bot, 12) == "pending"


async def test_an_update_waits_for_another_approver_and_runs_once(bot: SlackHarness) -> None:
    async with http_session(mcp_url(bot)) as session:
        proposed = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
        )
        assert proposed["status"] == "pending_approval"
        assert proposed["card"].startswith("https://")
        proposal_id = proposed["proposal_id"]
        # Not run: the table is as it was, and one card waits in the approval channel.
        assert await status_of_order(bot, 12) == "pending"
        [card] = cards_in_channel(bot)
        assert f"<@{ALICE}> via {CLIENT_NAME}" in card.text
        assert "1 row" in card.text
        opening = bot.slack.message(APPROVAL_CHANNEL, card.thread_ts or "")
        assert f"<@{ALICE}> via {CLIENT_NAME}" in opening.text
        audit_lines = [m.text for m in bot.slack.messages if m.channel == AUDIT_CHANNEL]
        assert any(f"<@{ALICE}> via {CLIENT_NAME} asks" in line for line in audit_lines)
        pending = json_of(await session.call_tool("get_proposal", {"proposal_id": proposal_id}))
        assert pending["status"] == "pending"

        # The person behind the client cannot approve it.
        seen = copy.deepcopy(card)
        await bot.click("approve_once", seen, user=ALICE)
        await bot.settled()
        assert await status_of_order(bot, 12) == "pending"
        assert any("four eyes" in m.text for m in bot.slack.ephemerals(ALICE))

        # Another approver's click runs it, once.
        await bot.click("approve_once", seen, user=OTHER_APPROVER)
        await bot.settled()
        assert await status_of_order(bot, 12) == "cancelled"
        done = json_of(await session.call_tool("get_proposal", {"proposal_id": proposal_id}))
        assert done["status"] == "executed"
        assert done["result"]["affected_rows"] == 1
        assert done["undo_available"] is True
        assert done["approvals"] == [OTHER_APPROVER]

        # A replayed click runs nothing more; the change is put back behind the bot's back
        # to see it.
        await run_sql(bot.shop_url, [f"UPDATE {SCHEMA}.orders SET status='pending' WHERE id=12"])
        await bot.click("approve_once", seen, user=OTHER_APPROVER)
        await bot.settled()
        assert await status_of_order(bot, 12) == "pending"

        # Replaying the MCP call proposes again: a second card, nothing run.
        again = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
        )
    assert again["proposal_id"] != proposal_id
    assert await status_of_order(bot, 12) == "pending"
    assert len(cards_in_channel(bot)) == 2
    assert bot.state is not None
    executed = [
        r
        for r in await bot.state.audit.since(None)
        if r["outcome"] == "executed" and r["risk"] == "write"
    ]
    assert len(executed) == 1
    assert executed[0]["origin"] == f"mcp:{CLIENT_NAME}"
    assert executed[0]["requester"] == ALICE and executed[0]["approver"] == OTHER_APPROVER


async def test_a_denied_change_is_reported_denied(bot: SlackHarness) -> None:
    async with http_session(mcp_url(bot)) as session:
        proposed = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
        )
        [card] = cards_in_channel(bot)
        await bot.click("deny", copy.deepcopy(card), user=OTHER_APPROVER)
        await bot.settled()
        denied = json_of(
            await session.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
        )
    assert denied["status"] == "denied"
    assert denied["decided_by"] == OTHER_APPROVER
    assert await status_of_order(bot, 12) == "pending"


async def test_another_persons_proposal_is_not_known(bot: SlackHarness) -> None:
    async with http_session(mcp_url(bot)) as session:
        result = await session.call_tool("get_proposal", {"proposal_id": "0" * 32})
    assert result.is_error
    assert "no proposal" in text_of(result)


@pytest.mark.parametrize(
    ("authorization", "why"),
    [
        (None, "no token"),
        (f"Bearer {OTHER_TOKEN}", "a token no client has"),
        (f"Bearer {ALICE_TOKEN[:-1]}", "all but the last character of a real token"),
        (f"Basic {ALICE_TOKEN}", "another scheme"),
        ("Bearer ", "an empty token"),
    ],
)
async def test_a_bad_token_gets_401_and_runs_nothing(
    bot: SlackHarness, authorization: str | None, why: str
) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_query", "arguments": {"database": STAGING, "sql": UPDATE}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    async with (
        aiohttp.ClientSession() as http,
        http.post(mcp_url(bot), json=call, headers=headers) as response,
    ):
        assert response.status == 401, why
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert cards_in_channel(bot) == [], why
    assert bot.state is not None
    assert await bot.state.audit.since(None) == [], why


async def test_an_approved_change_that_would_touch_more_rows_than_shown_is_rolled_back(
    bot: SlackHarness,
) -> None:
    cancel_pending = "UPDATE orders SET status = 'cancelled' WHERE status = 'pending'"
    async with http_session(mcp_url(bot)) as session:
        proposed = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": cancel_pending})
        )
        [card] = cards_in_channel(bot)
        assert "2 rows" in card.text
        # A third pending order arrives before the click: the card said 2.
        await run_sql(
            bot.shop_url, [f"INSERT INTO {SCHEMA}.orders VALUES (14, 'Eve', 'pending', 1)"]
        )
        await bot.click("approve_once", copy.deepcopy(card), user=OTHER_APPROVER)
        await bot.settled()
        failed = json_of(
            await session.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
        )
    assert failed["status"] == "failed"
    assert "rolled back" in failed["outcome"]
    rows = await run_sql(
        bot.shop_url, [f"SELECT COUNT(*) FROM {SCHEMA}.orders WHERE status = 'pending'"]
    )
    assert rows[0][0] == 3


async def test_two_required_approvers_neither_the_requester(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    harness = SlackHarness(slack, model, shop_url, tmp_path / "state")
    approvals = {"approvers": [APPROVER, GROUP, BYSTANDER], "environments": {"staging": 2}}
    configured = with_mcp(harness.settings, ALICE)
    harness.settings = configured.model_validate(
        {**configured.model_dump(), "approvals": approvals}
    )
    bot = await harness.start()
    try:
        async with http_session(mcp_url(bot)) as session:
            proposed = json_of(
                await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
            )
            assert proposed["required_approvals"] == 2
            card = copy.deepcopy(cards_in_channel(bot)[0])
            for user in (ALICE, OTHER_APPROVER, OTHER_APPROVER):  # herself; one person twice
                await bot.click("approve_once", card, user=user)
                await bot.settled()
            counted = json_of(
                await session.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
            )
            assert counted["status"] == "pending"
            assert counted["approvals"] == [OTHER_APPROVER]
            assert await status_of_order(bot, 12) == "pending"
            await bot.click("approve_once", card, user=BYSTANDER)
            await bot.settled()
            done = json_of(
                await session.call_tool("get_proposal", {"proposal_id": proposed["proposal_id"]})
            )
        assert done["status"] == "executed"
        assert sorted(done["approvals"]) == sorted([OTHER_APPROVER, BYSTANDER])
        assert await status_of_order(bot, 12) == "cancelled"
    finally:
        await harness.stop()


async def test_a_change_slack_will_not_show_is_refused_and_left_pending_nowhere(
    bot: SlackHarness,
) -> None:
    bot.slack.refuse_channel(APPROVAL_CHANNEL, "not_in_channel")
    async with http_session(mcp_url(bot)) as session:
        result = await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
    assert result.is_error
    assert "could not be posted" in text_of(result)
    assert bot.agent is not None
    assert await bot.agent.waiting_approvals() == []
    assert await status_of_order(bot, 12) == "pending"


async def test_a_card_slack_refuses_leaves_the_proposal_failed_and_nothing_pending(
    bot: SlackHarness,
) -> None:
    refuse_block_id(bot.slack, "approval")
    async with http_session(mcp_url(bot)) as session:
        result = await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
    assert result.is_error and "could not be posted" in text_of(result)
    assert bot.agent is not None and bot.state is not None
    assert await bot.agent.waiting_approvals() == []
    requests = [r for r in await bot.state.audit.since(None) if r["outcome"] == "withdrawn"]
    assert [r["origin"] for r in requests] == [f"mcp:{CLIENT_NAME}"]
    assert await status_of_order(bot, 12) == "pending"


async def test_an_mcp_change_is_approved_once_only_even_by_a_forged_thread_click(
    bot: SlackHarness,
) -> None:
    async with http_session(mcp_url(bot)) as session:
        proposed = json_of(
            await session.call_tool("execute_query", {"database": STAGING, "sql": UPDATE})
        )
    [card] = cards_in_channel(bot)
    buttons = [
        element["action_id"]
        for block in card.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    ]
    assert buttons == ["approve_once", "deny"]
    forged = bot.action_payload(
        card, "approve_thread", "approval", {"value": proposed["proposal_id"]}, user=OTHER_APPROVER
    )
    await bot.interact(forged)
    await bot.settled()
    assert await status_of_order(bot, 12) == "cancelled"
    assert bot.state is not None and card.thread_ts is not None
    session_id = f"{TEAM_ID}:{APPROVAL_CHANNEL}:{card.thread_ts}"
    executed = [r for r in await bot.state.audit.since(None) if r["outcome"] == "executed"]
    assert [r["session_id"] for r in executed] == [session_id]  # the card's thread
    assert not await bot.state.grants.live(session_id, STAGING, UPDATE)
    decided = bot.slack.message(APPROVAL_CHANNEL, card.ts)
    assert "Approved once" in str(decided.blocks)


@pytest.mark.parametrize(
    ("method", "token", "status", "why"),
    [
        ("GET", ALICE_TOKEN, 405, "no stream to open: stateless, nothing is sent unasked"),
        ("DELETE", ALICE_TOKEN, 405, "no session to end"),
        ("PUT", ALICE_TOKEN, 405, "not MCP"),
        ("GET", None, 401, "the token is checked first, whatever the method"),
    ],
)
async def test_only_posts_reach_the_sdk(
    bot: SlackHarness, method: str, token: str | None, status: int, why: str
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, mcp_url(bot), headers=headers) as response,
    ):
        assert response.status == status, why
        await response.read()  # answered at once, not held open
