"""An MCP client gets the data protection of the person it acts for: masked columns stay
masked in every tool's rows (unless that person is in `unmasked_for`), and a database kept to
some channels (`channels`) is not reached from outside Slack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.sql.masking import MASK
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import http_session, json_of, text_of, with_mcp
from tests.slack.conftest import APPROVER, BYSTANDER, CHANNEL, STAGING, SlackHarness

NAMES = ["Ada", "Ada & Co <ltd>", "Linus", '=HYPERLINK("x")']


async def protected_bot(
    slack: FakeSlack,
    model: FakeModelServer,
    shop_url: str,
    state_dir: Path,
    *,
    user: str,
    **protection: Any,
) -> SlackHarness:
    harness = SlackHarness(slack, model, shop_url, state_dir)
    configured = with_mcp(harness.settings, user).model_dump()
    configured["databases"] = [
        {**database, **protection} if database["name"] == STAGING else database
        for database in configured["databases"]
    ]
    harness.settings = harness.settings.model_validate(configured)
    return await harness.start()


@pytest.fixture
async def masked(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> AsyncIterator[SlackHarness]:
    bot = await protected_bot(
        slack,
        model,
        shop_url,
        tmp_path / "state",
        user=BYSTANDER,
        masked_columns=["orders.customer"],
        unmasked_for=[APPROVER],
    )
    yield bot
    await bot.stop()


M, R = "masked", "refused"
READS: list[tuple[str, dict[str, Any], str, str]] = [
    ("execute_query", {"sql": "SELECT id, customer FROM orders ORDER BY id"}, M, "a plain read"),
    ("execute_query", {"sql": "SELECT UPPER(customer) AS c FROM orders"}, M, "derived from it"),
    ("execute_query", {"sql": "SELECT id FROM orders WHERE customer LIKE 'A%'"}, R, "inferred"),
    ("get_sample_data", {"table": "orders"}, M, "sample rows"),
]


@pytest.mark.parametrize(("tool", "arguments", "expected", "why"), READS, ids=[r[3] for r in READS])
async def test_masked_columns_stay_masked_over_mcp(
    masked: SlackHarness, tool: str, arguments: dict[str, Any], expected: str, why: str
) -> None:
    async with http_session(f"{masked.url}/mcp") as session:
        result = await session.call_tool(tool, {"database": STAGING, **arguments})
    text = text_of(result)
    for name in NAMES:
        assert name not in text, why
    if expected == M:
        assert not result.is_error and MASK in text, why
    else:
        assert result.is_error and text.startswith("Blocked:"), why


async def test_a_person_unmasked_for_sees_the_values(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    bot = await protected_bot(
        slack,
        model,
        shop_url,
        tmp_path / "state",
        user=APPROVER,
        masked_columns=["orders.customer"],
        unmasked_for=[APPROVER],
    )
    try:
        async with http_session(f"{bot.url}/mcp") as session:
            rows = json_of(
                await session.call_tool(
                    "execute_query",
                    {"database": STAGING, "sql": "SELECT customer FROM orders ORDER BY id"},
                )
            )
        assert [row[0] for row in rows["rows"]] == NAMES
    finally:
        await bot.stop()


async def test_a_database_kept_to_channels_is_not_reached_over_mcp(
    slack: FakeSlack, model: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    bot = await protected_bot(
        slack, model, shop_url, tmp_path / "state", user=APPROVER, channels=[CHANNEL]
    )
    try:
        async with http_session(f"{bot.url}/mcp") as session:
            result = await session.call_tool(
                "execute_query", {"database": STAGING, "sql": "SELECT customer FROM orders"}
            )
        assert result.is_error
        assert text_of(result).startswith("Blocked:")
        assert "Ada" not in text_of(result)
    finally:
        await bot.stop()
