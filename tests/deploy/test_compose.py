"""compose.yaml, read as data (no container runtime is reachable here), and its demo run for
real: the demo schema loads into MariaDB, the bot's configuration loads, and the demo account
passes `dbagent check`'s privilege checks for approved changes."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.datasets import connect
from bot.check.database import database_lines
from bot.check.lines import Mark
from bot.config import ConnectionTarget, DatabaseConfig, Limits, load_settings
from tests.schemas import RUN_SUFFIX, run_schema

REPOSITORY = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((REPOSITORY / "compose.yaml").read_text())
SERVICES: dict[str, Any] = COMPOSE["services"]
DEMO_SQL = (REPOSITORY / "deploy" / "compose" / "demo.sql").read_text()


def mounted(service: str, target: str) -> Path:
    """The repository file a service mounts at `target`."""
    for volume in SERVICES[service]["volumes"]:
        source, _, rest = volume.partition(":")
        if rest.split(":")[0] == target:
            return REPOSITORY / source
    raise AssertionError(f"{service} mounts nothing at {target}")


def test_the_bot_redis_and_mariadb_start_in_order() -> None:
    assert set(SERVICES) == {"bot", "redis", "mariadb"}
    bot = SERVICES["bot"]
    assert bot["build"] == "."
    assert bot["depends_on"] == {
        "redis": {"condition": "service_healthy"},
        "mariadb": {"condition": "service_healthy"},
    }
    assert "healthcheck" in SERVICES["redis"] and "healthcheck" in SERVICES["mariadb"]


def test_three_slack_variables_and_a_model_are_all_it_asks_for() -> None:
    env = SERVICES["bot"]["environment"]
    required = {k for k, v in env.items() if re.fullmatch(r"\$\{\w+:\?.*\}", str(v))}
    # and the key that signs what the bot keeps in Redis (bot.state.seal)
    assert required == {"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DBAGENT_STATE_KEY"}
    assert env["SLACK_SIGNING_SECRET"] == "${SLACK_SIGNING_SECRET:-}"
    assert "OPENAI_API_KEY" in env and "OPENAI_BASE_URL" in env
    assert env["DBAGENT_STATE_URL"] == "redis://redis:6379/0"


def test_the_bot_runs_on_a_read_only_root_with_its_state_on_a_volume() -> None:
    bot = SERVICES["bot"]
    assert bot["read_only"] is True and "/tmp" in bot["tmpfs"]
    assert any(v.endswith(":/var/lib/dbagent") for v in bot["volumes"])
    assert bot["ports"] == [f"{bot['environment']['PORT']}:{bot['environment']['PORT']}"]


def test_redis_keeps_what_the_state_needs() -> None:
    command = SERVICES["redis"]["command"]
    assert command[command.index("--maxmemory-policy") + 1] == "noeviction"
    assert command[command.index("--appendonly") + 1] == "yes"


def test_the_bot_configuration_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = mounted("bot", "/etc/dbagent/dbagent.toml")
    monkeypatch.setenv("DBAGENT_CONFIG", str(config))
    monkeypatch.setenv("DEMO_DB_PASSWORD", SERVICES["bot"]["environment"]["DEMO_DB_PASSWORD"])
    settings = load_settings()
    [database] = settings.databases
    assert database.target.host == "mariadb" and database.schema_name == "shop"
    assert database.target.password.get_secret_value() in DEMO_SQL


SCHEMA = run_schema("dbagent_t_demo")
USER = f"dbagent_t_demo{RUN_SUFFIX}"


def demo_sql_for_this_run() -> list[str]:
    """demo.sql with the schema and account made run-unique (server-global names)."""
    text = DEMO_SQL.replace("`shop`", f"`{SCHEMA}`").replace("'dbagent'@'%'", f"'{USER}'@'%'")
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    return [statement.strip() for statement in text.split(";") if statement.strip()]


async def run_sql(url: str, statements: list[str]) -> None:
    connection = await connect(url)
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        connection.close()


@pytest.fixture
async def demo(mysql_url: str) -> AsyncIterator[str]:
    cleanup = [f"DROP DATABASE IF EXISTS `{SCHEMA}`", f"DROP USER IF EXISTS '{USER}'@'%'"]
    await run_sql(mysql_url, cleanup)
    await run_sql(mysql_url, demo_sql_for_this_run())
    target = ConnectionTarget.parse(mysql_url)
    yield f"mysql://{USER}:dbagent-demo@{target.host}:{target.port}/{SCHEMA}"
    await run_sql(mysql_url, cleanup)


async def test_the_demo_account_can_do_what_approved_changes_need(demo: str) -> None:
    config = DatabaseConfig(name="shop-demo", url=demo, environment="development")
    lines = await database_lines(config, Limits())
    assert [line for line in lines if line.mark is not Mark.PASSED] == []
    assert any(line.subject == "changes on shop-demo" for line in lines)
