"""Shared pieces of the agent tests: the shop schema, settings, and a way to read the database
behind the agent's back."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Awaitable, Callable

from bench.datasets import connect
from bot.agent import Agent, Requester, Skills, tools
from bot.agent.tools import ToolContext, ToolOutcome, ToolReply
from bot.agent.turns import ToolCall
from bot.config import Approvals, DatabaseConfig, Limits, Mode, Settings
from bot.db import DatabaseRegistry
from bot.state import State
from tests.fakes.model_server import FakeModelServer
from tests.schemas import RUN_SUFFIX, run_schema
from tests.waiting import until

# The tools each mode offers: the DESIGN's, plus ask_user (issue 6), which executes nothing.
ASK_TOOLS = frozenset(
    {"list_databases", "list_tables", "get_columns", "get_current_time", "get_skill", "ask_user"}
)
AGENT_TOOLS = ASK_TOOLS | {"execute_query", "get_sample_data", "explain_query"}

# One schema per test process: two runs at once (a developer and CI) never share rows.
SCHEMA = run_schema("dbagent_t_agent")
STAGING = "shop-staging"
PRODUCTION = "shop-prod"
BIG_ROWS = 10_000
# A read that runs for minutes: ten billion rows counted.
SLOW_READ = "SELECT COUNT(*) FROM seq_1_to_100000 AS a, seq_1_to_100000 AS b"

SHOP = [
    f"CREATE DATABASE IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.customers (
        id INT PRIMARY KEY,
        name VARCHAR(100) NOT NULL,
        country CHAR(2) NOT NULL
    ) COMMENT='people who buy'""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.orders (
        id INT PRIMARY KEY,
        customer_id INT NOT NULL,
        status VARCHAR(20) NOT NULL,
        total DECIMAL(10,2) NOT NULL,
        KEY idx_orders_customer (customer_id)
    ) COMMENT='one row per order'""",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.events (
        id INT PRIMARY KEY,
        payload VARCHAR(64) NOT NULL
    )""",
]
RESET = [
    f"DELETE FROM {SCHEMA}.customers",
    f"INSERT INTO {SCHEMA}.customers VALUES (1, 'Ada', 'GB'), (2, 'Linus', 'FI'), "
    "(3, 'Grace', 'US')",
    f"DELETE FROM {SCHEMA}.orders",
    f"INSERT INTO {SCHEMA}.orders VALUES (10, 1, 'paid', 20.00), (11, 1, 'pending', 5.50), "
    "(12, 2, 'pending', 12.00), (13, 3, 'shipped', 99.99)",
]


# Builds an Agent on the test's state directory; a second call is a restarted bot.
AgentFactory = Callable[..., Awaitable[Agent]]
REQUESTER = Requester(user_id="U0REQUEST", name="Ada", timezone="Europe/Berlin")
APPROVER = "U0APPROVE"
SESSION = "T1:C1:1700000000.000100"


def agent_mode_context(
    state: State, settings: Settings, databases: DatabaseRegistry, *, executions: bool = True
) -> ToolContext:
    """What a tool sees in agent mode for the test's requester (the model is not involved)."""
    return ToolContext(
        session_id=SESSION,
        requester=REQUESTER,
        mode=Mode.AGENT,
        settings=settings,
        databases=databases,
        skills=Skills.load(),
        grants=state.grants,
        audit=state.audit,
        executions=state.executions if executions else None,
    )


async def run_statements(url: str, statements: list[str]) -> None:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        connection.close()


async def query(url: str, sql: str) -> list[tuple]:
    """Read the database behind the agent's back, to check what really happened."""
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(sql)
            return list(await cursor.fetchall())
    finally:
        connection.close()


# Only this run's connections count (their default schema ends in its suffix): another run
# on the same server, or another checkout's tests, may be running the same slow read.
_OURS = (
    "SELECT id FROM information_schema.PROCESSLIST "
    "WHERE INFO LIKE '%seq_1_to_100000 AS b%' AND INFO NOT LIKE '%PROCESSLIST%' "
    f"AND DB LIKE '%{RUN_SUFFIX}'"
)


async def statement_running(url: str) -> bool:
    """Whether SLOW_READ (alone or inside a statement) is running on the server now, on one
    of this run's connections."""
    return bool(await query(url, _OURS))


async def no_slow_read_left(url: str) -> None:
    """Kill what an earlier test left of SLOW_READ and wait until the server has let go of it,
    so a test that waits for *its* statement to run never sees an earlier one."""
    for (thread_id,) in await query(url, _OURS):
        with contextlib.suppress(Exception):  # it may have ended in between
            await query(url, f"KILL QUERY {int(thread_id)}")
    await wait_for(lambda: _none_left(url), timeout_s=30.0)


async def _none_left(url: str) -> bool:
    return not await statement_running(url)


async def wait_for(condition: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
    await until(condition, within_s=timeout_s)


def make_settings(
    server: FakeModelServer, shop_url: str, *, approvals: Approvals | None = None, **limits: object
) -> Settings:
    return Settings(
        openai_base_url=server.url,
        openai_api_key="test-key",
        openai_model="fake-model",
        databases=[
            DatabaseConfig(
                name=STAGING,
                url=shop_url,
                environment="staging",
                description="Orders and customers, staging copy",
            ),
            DatabaseConfig(
                name=PRODUCTION,
                url=shop_url,
                environment="production",
                description="Orders and customers, live",
            ),
        ],
        limits=Limits(model_max_retries=2, statement_timeout_s=10, **limits),
        approvals=approvals or Approvals(),
    )


async def call_tool(context: ToolContext, name: str, arguments: object = None) -> ToolOutcome:
    """A tool call as the model would send it, through the registry."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    prepared = tools.prepare(ToolCall(id="call_1", name=name, arguments=raw), context.mode)
    if isinstance(prepared, ToolReply):
        return prepared
    return await tools.run(prepared, context)


async def reply_of(context: ToolContext, name: str, arguments: object = None) -> ToolReply:
    outcome = await call_tool(context, name, arguments)
    assert isinstance(outcome, ToolReply), outcome
    return outcome
