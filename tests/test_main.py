"""`dbagent` / `python -m bot` as a new user meets it: it serves, or it stops with one line
naming what is missing — never a traceback."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.__main__ import main
from bot.config import ConnectionTarget
from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_server import FakeSlack
from tests.private_redis import free_port

REPOSITORY = Path(__file__).resolve().parent.parent
TOKEN = "xoxb-main"


def environment(tmp_path: Path, **values: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "PYTHONPATH": str(REPOSITORY),
        "DBAGENT_STATE_DIR": str(tmp_path / "state"),
        **values,
    }


async def run_bot(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


@pytest.fixture
async def model() -> AsyncIterator[FakeModelServer]:
    async with FakeModelServer() as server:
        yield server


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(token=TOKEN) as server:
        yield server


MISSING = [
    # (environment beyond the basics, words of the one line, reason)
    ({}, "config file dbagent.toml not found (copy dbagent.example.toml", "nothing at all"),
    (
        {"DBAGENT_CONFIG": str(REPOSITORY / "dbagent.example.toml")},
        "no database configured: set DBAGENT_DATABASE_URL",
        "the example copied, nothing else",
    ),
    (
        {"DBAGENT_DATABASE_URL": "mysql://agent@127.0.0.1:1/shop"},
        "no model configured: set OPENAI_BASE_URL",
        "a database, no model",
    ),
    (
        {
            "DBAGENT_DATABASE_URL": "mysql://agent@127.0.0.1:1/shop",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
        },
        "SLACK_BOT_TOKEN is not set",
        "a database and a model, no Slack token",
    ),
    (
        {
            "DBAGENT_DATABASE_URL": "mysql://agent@127.0.0.1:1/shop",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
            "SLACK_BOT_TOKEN": TOKEN,
        },
        "SLACK_SIGNING_SECRET is not set",
        "HTTP mode without its signing secret",
    ),
    (
        {
            "DBAGENT_DATABASE_URL": "mysql://agent@127.0.0.1:1/shop",
            "OPENAI_BASE_URL": "http://127.0.0.1:1/v1",
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": "secret",
        },
        "no configured database is reachable (shop: cannot connect",
        "the only database is down",
    ),
]


@pytest.fixture
def bare_environment(tmp_path, monkeypatch) -> Path:
    """No Slack, model or dbagent variables, in an empty directory."""
    for name in list(os.environ):
        if name.startswith(("SLACK_", "OPENAI_", "DBAGENT_")) or name == "PORT":
            monkeypatch.delenv(name)
    monkeypatch.setenv("DBAGENT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("values", "words", "reason"), MISSING, ids=[row[-1] for row in MISSING])
def test_what_is_missing_is_one_line_and_exit_status_2(
    bare_environment, monkeypatch, capsys, values, words, reason
):
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    status = main([])
    stderr = capsys.readouterr().err
    assert status == 2, stderr
    assert "Traceback" not in stderr, reason
    assert stderr.count("\n") == 1 and stderr.startswith("dbagent: "), stderr
    assert words in stderr, f"{reason}: {stderr}"


async def test_a_fresh_process_with_nothing_configured_ends_in_one_line(tmp_path):
    status, stdout, stderr = await run_bot(tmp_path, environment(tmp_path))
    assert status == 2
    assert stdout == ""
    assert stderr.startswith("dbagent: config file dbagent.toml not found"), stderr
    assert stderr.count("\n") == 1, stderr


def test_help_needs_no_configuration(bare_environment, capsys):
    assert main(["--help"]) == 0
    stdout = capsys.readouterr().out
    assert "check" in stdout and "console" in stdout and "audit" in stdout


async def test_a_configured_bot_logs_one_summary_line_serves_and_stops_on_sigterm(
    tmp_path, mysql_url, model, slack
):
    env = environment(
        tmp_path,
        DBAGENT_DATABASE_URL=mysql_url,
        DBAGENT_DATABASE_ENVIRONMENT="staging",
        OPENAI_BASE_URL=model.url,
        OPENAI_MODEL="fake-model",
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET="secret",
        SLACK_API_URL=slack.api_url,
        PORT="0",
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    seen: list[str] = []
    try:
        while not any("is serving Slack" in line for line in seen):
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            assert line, "the bot exited before serving: " + "".join(seen)
            seen.append(line.decode())
        process.send_signal(signal.SIGTERM)
        rest = await asyncio.wait_for(process.stderr.read(), 30)
        status = await asyncio.wait_for(process.wait(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    log = "".join(seen) + rest.decode()
    assert status == 0, log
    [summary] = [line for line in log.splitlines() if "dbagent starting:" in line]
    # The database is named after the URL's schema (DBAGENT_TEST_MYSQL_URL may name another).
    name = ConnectionTarget.parse(mysql_url).schema_name
    assert f"databases {name} (staging)" in summary
    assert "modes channels agent, DMs ask" in summary
    assert "0 approver(s)" in summary
    assert "state embedded SQLite" in summary
    assert "Slack HTTP on port 0" in summary
    assert "Traceback" not in log


PER_REQUEST_LINES = [
    # (DBAGENT_LOG_LEVEL, whether the HTTP client's request line is logged, reason)
    (None, False, "INFO, the default: the bot's own lines, not one per HTTP request"),
    ("INFO", False, "INFO asked for: the same"),
    ("DEBUG", True, "DEBUG: every line, the HTTP client's too"),
]


@pytest.mark.parametrize(
    ("level", "shown", "reason"), PER_REQUEST_LINES, ids=[row[-1] for row in PER_REQUEST_LINES]
)
async def test_the_model_clients_request_lines_are_logged_only_at_debug(
    tmp_path, level, shown, reason
):
    env = environment(tmp_path, **({"DBAGENT_LOG_LEVEL": level} if level else {}))
    script = (
        "import logging; from bot.__main__ import _configure_logging; _configure_logging(); "
        "logging.getLogger('httpx2').info('HTTP Request: POST /v1/chat/completions'); "
        "logging.getLogger('openai').info('request options'); "
        "logging.getLogger('httpx2').warning('a warning of the client'); "
        "logging.getLogger('bot.slack.server').info('dbagent is serving')"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=tmp_path, env=env, stderr=asyncio.subprocess.PIPE
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    log = stderr.decode()
    assert process.returncode == 0, log
    assert "dbagent is serving" in log, reason
    assert "a warning of the client" in log, reason
    assert ("HTTP Request:" in log) is shown, f"{reason}: {log}"
    assert ("request options" in log) is shown, f"{reason}: {log}"


async def test_a_replica_down_at_start_is_a_warning_and_the_bot_serves(
    tmp_path, mysql_url, model, slack
):
    dead = f"mysql://root@127.0.0.1:{free_port()}/test"
    (tmp_path / "dbagent.toml").write_text(
        f'[[databases]]\nname = "shop"\nurl = "{mysql_url}"\nenvironment = "staging"\n'
        f'read_url = "{dead}"\n'
    )
    env = environment(
        tmp_path,
        DBAGENT_CONFIG=str(tmp_path / "dbagent.toml"),
        OPENAI_BASE_URL=model.url,
        OPENAI_MODEL="fake-model",
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET="secret",
        SLACK_API_URL=slack.api_url,
        PORT="0",
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", cwd=tmp_path, env=env, stderr=asyncio.subprocess.PIPE
    )
    assert process.stderr is not None
    seen: list[str] = []
    try:
        while not any("is serving Slack" in line for line in seen):
            line = await asyncio.wait_for(process.stderr.readline(), 30)
            assert line, "the bot exited before serving: " + "".join(seen)
            seen.append(line.decode())
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    log = "".join(seen)
    [warning] = [line for line in log.splitlines() if "the replica of shop" in line]
    assert "WARNING" in warning and "reads go to the primary" in warning
    assert "no configured database is reachable" not in log
