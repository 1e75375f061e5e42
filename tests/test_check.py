"""`dbagent check` against a real MariaDB, the fake model server and the fake Slack Web API:
one line per check, ✓ / ! / ✗ with the fix, exit status 0 only when nothing failed."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncmy
import pytest
import redis.asyncio as redis
from aiohttp import web

from bot.check import Mark, check_main, manifest_scopes, read_manifest, report, run_checks
from bot.config import ConnectionTarget, DatabaseConfig, Settings
from tests.fakes.model_server import FakeModelServer, call, calls, say
from tests.fakes.slack_server import FakeSlack
from tests.schemas import RUN_SUFFIX, run_schema

TOKEN = "xoxb-check"
APPROVER = "U0APPROVER"
GROUP = "S0ONCALL"
SCHEMA = run_schema("dbagent_t_check")
READER = f"dbagent_t_reader{RUN_SUFFIX}"
READER_PASSWORD = "reader-pw"
REPOSITORY = Path(__file__).resolve().parent.parent
ALL_SCOPES = manifest_scopes(read_manifest() or "")


class ScopedSlack(FakeSlack):
    """The fake Web API, answering with the token's scopes as Slack does (x-oauth-scopes)."""

    def __init__(self, scopes: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scopes = scopes

    def build(self) -> web.Application:
        app = super().build()

        @web.middleware
        async def scopes_header(request: web.Request, handler: Any) -> web.StreamResponse:
            response: web.StreamResponse = await handler(request)
            response.headers["x-oauth-scopes"] = ",".join(self.scopes)
            return response

        app.middlewares.append(scopes_header)
        return app


async def _admin(url: str, *statements: str) -> None:
    target = ConnectionTarget.parse(url)
    connection = await asyncmy.connect(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password.get_secret_value(),
        connect_timeout=15,
    )
    try:
        async with connection.cursor() as cursor:
            for statement in statements:
                await cursor.execute(statement)
    finally:
        connection.close()


@pytest.fixture
async def reader_url(mysql_url: str) -> AsyncIterator[str]:
    """A schema of this run and an account that may only read it."""
    target = ConnectionTarget.parse(mysql_url)
    account = f"'{READER}'@'{target.host}'"
    await _admin(
        mysql_url,
        f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`",
        f"DROP USER IF EXISTS {account}",
        f"CREATE USER {account} IDENTIFIED BY '{READER_PASSWORD}'",
        f"GRANT SELECT, SHOW VIEW ON `{SCHEMA}`.* TO {account}",
    )
    yield f"mysql://{READER}:{READER_PASSWORD}@{target.host}:{target.port}/{SCHEMA}"
    await _admin(mysql_url, f"DROP USER IF EXISTS {account}")


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer() as server:
        yield server


@pytest.fixture
async def slack() -> AsyncIterator[ScopedSlack]:
    server = ScopedSlack(
        ALL_SCOPES,
        users={APPROVER: "Europe/Paris"},
        usergroups={GROUP: [APPROVER, "U0SECOND"]},
        token=TOKEN,
    )
    async with server:
        yield server


def settings_for(
    databases: list[DatabaseConfig],
    model: FakeModelServer,
    slack: FakeSlack,
    tmp_path: Path,
    **overrides: Any,
) -> Settings:
    values: dict[str, Any] = {
        "slack_bot_token": TOKEN,
        "slack_signing_secret": "secret",
        "slack_api_url": slack.api_url,
        "openai_base_url": model.url,
        "openai_api_key": "test",
        "openai_model": "fake-model",
        "dbagent_state_dir": tmp_path / "state",
        "dbagent_config": tmp_path / "absent.toml",
        "databases": databases,
        "approvals": {"approvers": [APPROVER, GROUP]},
        "limits": {"model_max_retries": 0, "connect_timeout_s": 15},
    }
    values.update(overrides)
    return Settings(**values)


def probe_answered(model: FakeModelServer) -> None:
    model.script(calls(call("report_status", {"status": "ok"})))


def lines_about(lines: list[Any], subject: str) -> list[Any]:
    return [line for line in lines if line.subject.startswith(subject)]


async def test_everything_in_order_passes_with_exit_status_zero(reader_url, model, slack, tmp_path):
    probe_answered(model)
    production = DatabaseConfig(name="shop-prod", url=reader_url, environment="production")
    settings = settings_for([production], model, slack, tmp_path)
    lines = await run_checks(settings)
    out = io.StringIO()
    assert report(lines, out) == 0, out.getvalue()
    assert all(line.mark is Mark.PASSED for line in lines), out.getvalue()
    [database] = lines_about(lines, "database shop-prod")
    assert "MariaDB 10." in database.detail
    assert "lower_case_table_names=0" in database.detail
    assert "SELECT" in database.detail and "SHOW VIEW" in database.detail
    assert "answered with a tool call" in lines_about(lines, "model")[0].detail
    assert lines_about(lines, "approvers")[0].detail.startswith("2 configured, 3 person(s)")
    assert f"all {len(ALL_SCOPES)} scopes" in lines_about(lines, "Slack scopes")[0].detail
    assert model.tools_offered() == ["report_status"], "the probe offers one tiny tool"
    assert out.getvalue().endswith("all checks passed, 0 warning(s)\n")


async def test_a_powerful_account_on_production_is_warned_about(mysql_url, model, slack, tmp_path):
    probe_answered(model)
    await _admin(mysql_url, f"CREATE DATABASE IF NOT EXISTS `{SCHEMA}`")
    root_url = mysql_url.rsplit("/", 1)[0] + f"/{SCHEMA}"
    production = DatabaseConfig(name="shop-prod", url=root_url, environment="production")
    lines = await run_checks(settings_for([production], model, slack, tmp_path))
    warnings = [line for line in lines if line.mark is Mark.WARNING]
    text = "\n".join(line.render() for line in warnings)
    assert any("ALL PRIVILEGES on the whole server" in line.detail for line in warnings), text
    assert any("on a production database" in line.detail for line in warnings), text
    assert all(line.fix for line in warnings), "every warning says what to do"
    assert report(lines, io.StringIO()) == 0, "warnings alone do not fail the check"


async def test_each_missing_piece_is_one_failed_line_with_its_fix(
    reader_url, mysql_url, model, slack, tmp_path
):
    model.script(say("I would rather just talk."))
    slack.scopes = [scope for scope in ALL_SCOPES if scope != "files:write"]
    target = ConnectionTarget.parse(mysql_url)
    closed_port = DatabaseConfig(
        name="gone", url=f"mysql://root@{target.host}:1/{SCHEMA}", environment="staging"
    )
    bad_password = DatabaseConfig(
        name="wrong-pw",
        url=reader_url.replace(READER_PASSWORD, "not-it"),
        environment="staging",
    )
    settings = settings_for(
        [closed_port, bad_password],
        model,
        slack,
        tmp_path,
        approvals={"approvers": [APPROVER, "U0NOBODY", "S0NOGROUP"]},
    )
    lines = await run_checks(settings)
    out = io.StringIO()
    assert report(lines, out) == 1
    failures = {line.subject: line for line in lines if line.mark is Mark.FAILED}
    assert "cannot connect" in failures["database gone (staging)"].detail
    assert "database wrong-pw (staging)" in failures
    assert "without a tool call" in failures["model fake-model"].detail
    assert "files:write" in failures["Slack scopes"].detail
    assert "user_not_found" in failures["approver U0NOBODY"].detail
    assert "no_such_subteam" in failures["approver S0NOGROUP"].detail
    assert all(line.fix for line in failures.values())
    assert "not-it" not in out.getvalue(), "no password in the output"
    assert out.getvalue().splitlines()[-1].startswith(f"{len(failures)} check(s) failed")


async def test_a_token_slack_refuses_fails_and_stops_the_slack_checks(
    reader_url, model, slack, tmp_path
):
    probe_answered(model)
    # Production: a read-only account is all it needs (on staging it would fail the check).
    database = DatabaseConfig(name="shop", url=reader_url, environment="production")
    settings = settings_for([database], model, slack, tmp_path, slack_bot_token="xoxb-revoked")
    lines = await run_checks(settings)
    [refused] = [line for line in lines if line.mark is Mark.FAILED]
    assert refused.subject == "Slack auth.test" and "invalid_auth" in refused.detail
    assert not lines_about(lines, "approvers")


async def test_socket_mode_is_checked_with_the_app_token(reader_url, model, slack, tmp_path):
    probe_answered(model)
    database = DatabaseConfig(name="shop", url=reader_url, environment="production")
    settings = settings_for(
        [database], model, slack, tmp_path, slack_app_token="xapp-1", slack_signing_secret=None
    )
    lines = await run_checks(settings)
    [mode] = lines_about(lines, "Slack Socket Mode")
    assert mode.mark is Mark.PASSED
    assert [c.token for c in slack.calls_to("apps.connections.open")] == ["xapp-1"]


async def test_no_database_no_model_and_no_token_are_each_named(tmp_path):
    settings = Settings(dbagent_state_dir=tmp_path / "state", dbagent_config=tmp_path / "x.toml")
    lines = await run_checks(settings)
    failed = {line.subject: line.detail for line in lines if line.mark is Mark.FAILED}
    assert failed["databases"] == "none configured"
    assert failed["model gpt-4o-mini"] == "no model server configured"
    assert failed["Slack"] == "SLACK_BOT_TOKEN is not set"


async def test_a_configuration_that_does_not_load_is_one_failed_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DBAGENT_CONFIG", str(tmp_path / "missing.toml"))
    out = io.StringIO()
    assert await check_main([], out) == 1
    first, summary = out.getvalue().splitlines()
    assert first.startswith("✗ configuration: config file") and "fix:" in first
    assert summary == "1 check(s) failed, 0 warning(s)"


async def test_dbagent_check_runs_end_to_end_from_another_directory(
    reader_url, model, slack, tmp_path
):
    probe_answered(model)
    environment = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "DBAGENT_DATABASE_URL": reader_url,
        "DBAGENT_DATABASE_ENVIRONMENT": "production",
        "DBAGENT_STATE_DIR": str(tmp_path / "state"),
        "OPENAI_BASE_URL": model.url,
        "OPENAI_API_KEY": "test",
        "OPENAI_MODEL": "fake-model",
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": slack.api_url,
        "PYTHONPATH": str(REPOSITORY),
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "check",
        cwd=tmp_path,
        env=environment,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    output = stdout.decode()
    assert process.returncode == 0, output + stderr.decode()
    assert "Traceback" not in output + stderr.decode()
    assert f"✓ database {SCHEMA} (production): MariaDB" in output
    assert "✓ model fake-model" in output
    assert "✓ Slack auth.test: signed in as dbagent" in output
    assert "✓ approvers: none configured, and none needed (production only)" in output
    assert output.splitlines()[-1] == "all checks passed, 0 warning(s)"


async def test_a_replica_is_checked_as_well(reader_url, mysql_url, model, slack, tmp_path):
    probe_answered(model)
    target = ConnectionTarget.parse(mysql_url)
    database = DatabaseConfig(
        name="shop",
        url=reader_url,
        read_url=f"mysql://root@{target.host}:1/{SCHEMA}",
        environment="production",
    )
    lines = await run_checks(settings_for([database], model, slack, tmp_path))
    [primary] = lines_about(lines, "database shop (production)")[:1]
    [replica] = lines_about(lines, "database shop (production) replica")
    assert primary.mark is Mark.PASSED
    assert replica.mark is Mark.FAILED and "cannot connect" in replica.detail


async def test_a_redis_that_evicts_keys_is_a_warning(redis_url, tmp_path):
    # Leases, pending approvals and seen events must stay until they expire or are taken.
    settings = Settings(dbagent_state_url=redis_url, dbagent_config=tmp_path / "x.toml")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    before = (await client.config_get("maxmemory-policy"))["maxmemory-policy"]
    try:
        await client.config_set("maxmemory-policy", "allkeys-lru")
        [state] = [line for line in await run_checks(settings) if line.subject == "state"]
        assert state.mark is Mark.WARNING
        assert "allkeys-lru" in state.detail and "noeviction" in state.fix
    finally:
        await client.config_set("maxmemory-policy", before)
        await client.aclose()


async def test_redis_state_is_checked_by_asking_it(redis_url, tmp_path):
    answering = Settings(dbagent_state_url=redis_url, dbagent_config=tmp_path / "x.toml")
    [state] = [line for line in await run_checks(answering) if line.subject == "state"]
    assert state.mark is Mark.PASSED and "answers" in state.detail
    gone = Settings(dbagent_state_url="redis://127.0.0.1:1/0", dbagent_config=tmp_path / "x.toml")
    [state] = [line for line in await run_checks(gone) if line.subject == "state"]
    assert state.mark is Mark.FAILED and "DBAGENT_STATE_URL" in state.fix


# (DBAGENT_STATE_KEY, SLACK_BOT_TOKEN, the check's mark, why)
SIGNING_KEYS = [
    (None, None, Mark.FAILED, "nothing to sign the shared store with"),
    ("too-short", "xoxb-1", Mark.FAILED, "a key of its own shorter than 32 characters"),
    (None, "xoxb-1", Mark.PASSED, "signed with a key derived from the bot token"),
    ("k" * 32, None, Mark.PASSED, "signed with a key of its own"),
]


@pytest.mark.parametrize(
    ("key", "token", "mark", "why"), SIGNING_KEYS, ids=[why for *_, why in SIGNING_KEYS]
)
async def test_redis_state_is_checked_for_what_signs_it(redis_url, tmp_path, key, token, mark, why):
    settings = Settings(
        dbagent_state_url=redis_url,
        dbagent_state_key=key,
        slack_bot_token=token,
        dbagent_config=tmp_path / "x.toml",
    )
    [signing] = [line for line in await run_checks(settings) if line.subject == "state key"]
    assert signing.mark is mark, why
    if mark is Mark.FAILED:
        assert "DBAGENT_STATE_KEY" in signing.fix, why
