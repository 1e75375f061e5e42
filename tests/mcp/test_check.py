"""`dbagent check` with MCP clients: the approval channel and each client's user, one line
each when something is wrong, with the fix."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.check import Mark, run_checks
from bot.check.mcp import mcp_lines
from bot.config import Settings
from tests.fakes.slack_server import FakeSlack
from tests.mcp.support import APPROVAL_CHANNEL, CLIENT_NAME, with_mcp

TOKEN = "xoxb-check"
ALICE = "U0ALICE"


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(users={ALICE: "UTC"}, token=TOKEN) as server:
        yield server


def settings(slack: FakeSlack, tmp_path: Path, user: str = ALICE) -> Settings:
    base = Settings(
        slack_bot_token=TOKEN,
        slack_api_url=slack.api_url,
        dbagent_state_dir=tmp_path / "state",
        databases=[],
    )
    return with_mcp(base, user)


def no_member(slack: FakeSlack) -> None:
    slack.channels_without_bot.add(APPROVAL_CHANNEL)


def channel_unknown(slack: FakeSlack) -> None:
    slack.fail_next("conversations.info", "channel_not_found")


def nothing(slack: FakeSlack) -> None:
    pass


@pytest.mark.parametrize(
    ("fault", "user", "expected", "why"),
    [
        (nothing, ALICE, {"MCP approval channel": Mark.PASSED, "MCP clients": Mark.PASSED}, "ok"),
        (no_member, ALICE, {"MCP approval channel": Mark.WARNING}, "the bot is not invited"),
        (channel_unknown, ALICE, {"MCP approval channel": Mark.FAILED}, "no such channel"),
        (
            nothing,
            "U0NOBODY",
            {"MCP approval channel": Mark.PASSED, f"MCP client {CLIENT_NAME}": Mark.FAILED},
            "the client's user is unknown",
        ),
    ],
)
async def test_the_mcp_lines(
    slack: FakeSlack,
    tmp_path: Path,
    fault: Callable[[FakeSlack], None],
    user: str,
    expected: dict[str, Mark],
    why: str,
) -> None:
    fault(slack)
    lines = await mcp_lines(settings(slack, tmp_path, user))
    assert {line.subject: line.mark for line in lines} == expected, why
    assert all(line.fix for line in lines if line.mark is not Mark.PASSED), why


async def test_no_clients_no_lines(slack: FakeSlack, tmp_path: Path) -> None:
    plain = Settings(slack_bot_token=TOKEN, slack_api_url=slack.api_url, databases=[])
    assert await mcp_lines(plain) == []


async def test_the_whole_check_includes_them(slack: FakeSlack, tmp_path: Path) -> None:
    lines = await run_checks(settings(slack, tmp_path))
    assert [line.subject for line in lines if line.subject.startswith("MCP")] == [
        "MCP approval channel",
        "MCP clients",
    ]
