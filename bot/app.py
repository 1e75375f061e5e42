"""The bot's parts — settings, state store, databases, model client, agent — built in one place.

The Slack server, the console, the tests' harnesses and the benchmarks all build them here, so
a part added later is wired once and closed once. `serving_problem` names what a configuration
still lacks before the bot can serve, and `summary` is the line the bot logs when it starts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.config import DatabaseConfig, Environment, Settings

if TYPE_CHECKING:
    # Imported where used: `dbagent` names what is missing before loading the heavy parts.
    from bot.agent import Agent, ModelClient, Skills
    from bot.agent.outcomes import Recovered
    from bot.db import DatabaseRegistry
    from bot.state import State

log = logging.getLogger(__name__)


@dataclass
class App:
    settings: Settings
    state: State
    databases: DatabaseRegistry
    model: ModelClient
    agent: Agent
    # What a previous process left going, for the adapter: approved changes it stopped while
    # they ran (never re-run; their threads are told) and runs cut off (resumed or reported).
    interrupted: list[Recovered] = field(default_factory=list)

    async def close(self) -> None:
        """Close what was opened, last built first."""
        try:
            await self.model.close()
        finally:
            try:
                await self.databases.close()
            finally:
                await self.state.close()


async def open_store(settings: Settings) -> State:
    """The state store the settings name: Redis at DBAGENT_STATE_URL, else embedded SQLite
    in DBAGENT_STATE_DIR."""
    from bot.state import open_state

    return await open_state(settings)


async def build_app(
    settings: Settings,
    *,
    databases: Sequence[DatabaseConfig] | None = None,
    state: State | None = None,
    skills: Skills | None = None,
    model: ModelClient | None = None,
    stream: bool = True,
    recover: bool = True,
) -> App:
    """Build every part. `databases` narrows the configured ones (the console's --database);
    `model` replaces the model client (benchmarks compare clients); `recover` settles what a
    previous process left running (see `App.interrupted`)."""
    from bot.agent import Agent, Skills, build_model_client
    from bot.db import DatabaseRegistry

    opened_state = state or await open_store(settings)
    registry = DatabaseRegistry(
        settings.databases if databases is None else databases, settings.limits
    )
    model = model or build_model_client(settings, stream=stream)
    agent = Agent(
        settings=settings,
        state=opened_state,
        databases=registry,
        model=model,
        skills=skills if skills is not None else Skills.load(),
    )
    app = App(settings, opened_state, registry, model, agent)
    if recover:
        try:
            app.interrupted = list(await agent.recover())
        except BaseException:
            await app.close()
            raise
    return app


@asynccontextmanager
async def running_app(
    settings: Settings,
    *,
    databases: Sequence[DatabaseConfig] | None = None,
    stream: bool = True,
) -> AsyncIterator[App]:
    """`build_app` as a context: the parts are closed when it ends, whatever ended it."""
    app = await build_app(settings, databases=databases, stream=stream)
    try:
        yield app
    finally:
        await app.close()


def model_configured(settings: Settings) -> bool:
    """A model server is named: an OpenAI-compatible base URL, or an OpenAI API key."""
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    return bool(settings.openai_base_url or key)


def slack_socket_mode(settings: Settings) -> bool:
    return bool(settings.slack_app_token and settings.slack_app_token.get_secret_value())


def agent_problem(settings: Settings) -> str | None:
    """What the configuration lacks before the agent can answer anyone (a database and a
    model), as one line with the fix; None when nothing is missing."""
    if not settings.databases:
        return (
            f"no database configured: set DBAGENT_DATABASE_URL=mysql://user:password@host:3306/"
            f"schema, or add a [[databases]] entry to {settings.dbagent_config}"
        )
    if not model_configured(settings):
        return (
            "no model configured: set OPENAI_BASE_URL (any OpenAI-compatible server) and "
            "OPENAI_MODEL, or OPENAI_API_KEY for OpenAI's own"
        )
    return None


def serving_problem(settings: Settings) -> str | None:
    """What the configuration still lacks before the bot can serve Slack, as one line with
    the fix; None when nothing is missing. Checked in the order a new user meets them."""
    problem = agent_problem(settings)
    if problem is not None:
        return problem
    token = settings.slack_bot_token
    if token is None or not token.get_secret_value():
        return (
            "SLACK_BOT_TOKEN is not set (the bot token, xoxb-…, from the Slack app's "
            "OAuth & Permissions page; see README, Slack app setup)"
        )
    secret = settings.slack_signing_secret
    if not slack_socket_mode(settings) and (secret is None or not secret.get_secret_value()):
        return (
            "SLACK_SIGNING_SECRET is not set (needed in HTTP mode; or set SLACK_APP_TOKEN, "
            "xapp-…, for Socket Mode)"
        )
    return None


async def unreachable_databases(settings: Settings) -> dict[str, str]:
    """Configured databases whose primary does not answer now, by name, with the reason. A
    replica (`read_url`) is judged apart: one that does not answer is logged, and reads go
    to the primary until it does (bot/db/database.py)."""
    from bot.db import Database

    async def probe(config: DatabaseConfig) -> str | None:
        database = Database(config, settings.limits)
        try:
            primary, replica = await database.probe()
        finally:
            await database.close()
        if primary is None and replica is not None:
            log.warning(
                "the replica of %s is unreachable for now (%s): its reads go to the primary "
                "until it answers",
                config.name,
                replica,
            )
        return primary

    reasons = await asyncio.gather(*(probe(config) for config in settings.databases))
    return {
        config.name: reason
        for config, reason in zip(settings.databases, reasons, strict=True)
        if reason is not None
    }


def summary(settings: Settings) -> str:
    """One line for the log at start: what this process serves, and how."""
    databases = ", ".join(f"{db.name} ({db.environment.value})" for db in settings.databases)
    asked_in = {mode.value for mode in settings.channels.values()}
    modes = "channels agent, DMs ask"
    if asked_in:
        modes += f", {len(settings.channels)} channel override(s)"
    approvals = settings.approvals
    required = {env.value: approvals.required_for(env) for env in Environment}
    required_text = (
        str(approvals.required)
        if len(set(required.values())) == 1
        else ", ".join(f"{env} {count}" for env, count in required.items())
    )
    if settings.dbagent_state_url:
        state = "Redis"
    else:
        state = f"embedded SQLite at {settings.dbagent_state_dir}"
    slack = "Socket Mode" if slack_socket_mode(settings) else f"HTTP on port {settings.port}"
    return (
        f"dbagent starting: databases {databases or 'none'}; modes {modes}; "
        f"{len(approvals.approvers)} approver(s), {required_text} required per change; "
        f"model {settings.openai_model}; state {state}; Slack {slack}"
    )
