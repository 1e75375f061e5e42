"""Fixtures for the agent tests: a small shop schema on the real MariaDB, the fake model server,
and an Agent wired to both through the real `openai` client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.agent import Agent
from bot.agent.tools import ToolContext
from bot.app import App, build_app
from bot.config import ConnectionTarget
from bot.db import DatabaseRegistry
from bot.state import State, open_state
from tests.agent.support import (
    BIG_ROWS,
    RESET,
    SCHEMA,
    SHOP,
    AgentFactory,
    agent_mode_context,
    make_settings,
    run_statements,
)
from tests.fakes.model_server import FakeModelServer

_created_on: list[str] = []  # the server URL, once this process made its schema


@pytest.fixture(scope="session", autouse=True)
def drop_the_shop_schema_at_the_end() -> Iterator[None]:
    yield
    if _created_on:
        asyncio.run(run_statements(_created_on[0], [f"DROP DATABASE IF EXISTS {SCHEMA}"]))


@pytest.fixture
async def shop_url(mysql_url: str) -> str:
    """The shop schema, with customers and orders reset for each test; URL to reach it."""
    statements = SHOP + RESET
    if not _created_on:
        statements += [
            f"DELETE FROM {SCHEMA}.events",
            f"INSERT INTO {SCHEMA}.events SELECT seq, CONCAT('event payload number ', seq) "
            f"FROM {SCHEMA}.seq_1_to_{BIG_ROWS}",
        ]
    await run_statements(mysql_url, statements)
    if not _created_on:
        _created_on.append(mysql_url)
    target = ConnectionTarget.parse(mysql_url)
    password = target.password.get_secret_value()
    credentials = f"{target.user}:{password}" if password else target.user
    return f"mysql://{credentials}@{target.host}:{target.port}/{SCHEMA}"


@pytest.fixture
async def model_server() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer(api_key="test-key") as server:
        yield server


@pytest.fixture(params=[True, False], ids=["streamed", "plain"])
def streaming(request: pytest.FixtureRequest) -> bool:
    return request.param


@pytest.fixture
async def make_agent(
    model_server: FakeModelServer, shop_url: str, tmp_path: Path, streaming: bool
) -> AsyncIterator[AgentFactory]:
    """Builds Agents on one state directory (a second call is a restarted bot)."""
    opened: list[App] = []

    async def build(*, recover: bool = True, **limits: object) -> Agent:
        settings = make_settings(model_server, shop_url, **limits)
        for earlier in opened:  # a restart: the bot before it has stopped
            await earlier.state.close()
        state = await open_state(
            settings.model_copy(update={"dbagent_state_dir": tmp_path / "state"})
        )
        parts = await build_app(settings, state=state, stream=streaming, recover=recover)
        opened.append(parts)
        return parts.agent

    yield build
    for parts in opened:
        await parts.close()


@pytest.fixture
async def agent(make_agent: AgentFactory) -> Agent:
    return await make_agent()


@pytest.fixture
async def tool_context(
    state: State, shop_url: str, model_server: FakeModelServer
) -> AsyncIterator[ToolContext]:
    """What a tool sees in agent mode, on the real database (the model is not involved)."""
    settings = make_settings(model_server, shop_url)
    registry = DatabaseRegistry(settings.databases, settings.limits)
    yield agent_mode_context(state, settings, registry)
    await registry.close()
