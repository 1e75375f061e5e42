"""`python -m bot serve --workers N`: N processes on shared Redis state; refused embedded."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp

from tests.fakes.local import free_port
from tests.fakes.model_server import FakeModelServer, Turn, call, calls, say
from tests.fakes.slack_server import BOT_USER_ID, TEAM_ID, FakeSlack
from tests.slack.conftest import CHANNEL, signed_headers
from tests.slack.scrape import scrape
from tests.waiting import until

CONFIG = """
[[databases]]
name = "shop-staging"
url = "{url}"
environment = "staging"
"""


def environment(
    tmp_path: Path, database_url: str = "mysql://nobody@127.0.0.1:1/shop", **extra: str
) -> dict[str, str]:
    config = tmp_path / "dbagent.toml"
    config.write_text(CONFIG.format(url=database_url))
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DBAGENT_", "SLACK_", "OPENAI_"))
    }
    return {
        **env,
        "DBAGENT_CONFIG": str(config),
        "DBAGENT_STATE_DIR": str(tmp_path / "state"),
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": "http://127.0.0.1:1/api/",  # unreachable: the token check is skipped
        "OPENAI_API_KEY": "unused",
        "DBAGENT_STATE_KEY": os.environ["DBAGENT_STATE_KEY"],  # signs Redis state
        **extra,
    }


async def test_workers_are_refused_on_the_embedded_store_with_one_line(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        "--workers",
        "2",
        env=environment(tmp_path),
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    (line,) = err.decode().strip().splitlines()
    assert "--workers needs shared state: set DBAGENT_STATE_URL=redis://" in line


async def test_two_workers_serve_one_port_and_stop_together(
    tmp_path: Path, redis_url: str, redis_prefix: str, mysql_url: str
) -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        "--workers",
        "2",
        env=environment(
            tmp_path,
            # The bot refuses to start when no configured database is reachable.
            database_url=mysql_url,
            DBAGENT_STATE_URL=f"{redis_url}?prefix={redis_prefix}",
            PORT=str(port),
        ),
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    serving = 0
    try:
        async with asyncio.timeout(60):
            while serving < 2:
                line = (await process.stderr.readline()).decode()
                assert line, "the workers stopped before serving"
                serving += "is serving Slack over HTTP" in line
        async with aiohttp.ClientSession() as session:
            for _ in range(4):
                async with session.get(f"http://127.0.0.1:{port}/health") as response:
                    assert response.status == 200
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 60)
    assert process.returncode == 0


async def test_metrics_from_any_worker_count_every_worker(
    tmp_path: Path, redis_url: str, redis_prefix: str, mysql_url: str
) -> None:
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()  # prometheus_client wants it to exist; the workers start it empty
    async with (
        FakeSlack() as slack,
        FakeModelServer(responder=query_then_answer) as model,
    ):
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            "--workers",
            "2",
            env=environment(
                tmp_path,
                database_url=mysql_url,
                DBAGENT_STATE_URL=f"{redis_url}?prefix={redis_prefix}",
                PORT=str(port),
                SLACK_API_URL=slack.api_url,
                OPENAI_BASE_URL=model.url,
                PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
            ),
            stderr=asyncio.subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            # Each worker checks its token once at start: auth.test twice in all.
            await slack.wait_for(lambda: len(slack.calls_to("auth.test")) == 2, within_s=60)
            await until(lambda: serving(base), within_s=60)

            # One worker made one of them: once both are counted, any scrape shows both.
            async def both_counted() -> bool:
                return (await scrape(base)).value("dbagent_slack_calls_total") == 2

            await until(both_counted)
            for _ in range(4):
                assert (await scrape(base)).value("dbagent_slack_calls_total") == 2
            mentions = [f"18000002{n:02d}.000100" for n in range(6)]
            for ts in mentions:
                assert await send_mention(port, ts) == 200
            for ts in mentions:
                await slack.wait_for(lambda ts=ts: slack.thread(CHANNEL, ts), within_s=30)

            async def all_turns_counted() -> bool:
                return (await scrape(base)).value("dbagent_turns_total") == len(mentions)

            await until(all_turns_counted)
            # Whichever worker answers the scrape (the kernel spreads the connections), it
            # sums both.
            for _ in range(8):
                seen = await scrape(base)
                assert seen.value("dbagent_turns_total", outcome="answer") == len(mentions)
                assert seen.value("dbagent_model_calls_total", result="ok") == 2 * len(mentions)
                tool = {"tool": "execute_query", "outcome": "ok"}
                assert seen.value("dbagent_tool_calls_total", **tool) == len(mentions)
                ran = {"risk": "read_only", "decision": "run"}
                assert seen.value("dbagent_statements_total", **ran) == len(mentions)
                counted = seen.value("dbagent_slack_calls_total", method="auth.test")
                assert counted == len(slack.calls_to("auth.test"))
            assert len(list(metrics_dir.glob("counter_*.db"))) == 2  # one file per worker
        finally:
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 60)
    assert process.returncode == 0


def query_then_answer(body: dict[str, Any]) -> Turn:
    """Each turn: one read through execute_query, then the answer."""
    if body["messages"][-1]["role"] == "tool":
        return say("Answered by a worker.")
    return calls(call("execute_query", {"database": "shop-staging", "sql": "SELECT 1"}))


async def serving(base: str) -> bool:
    try:
        async with aiohttp.ClientSession() as http, http.get(f"{base}/health") as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


async def send_mention(port: int, ts: str) -> int:
    body = json.dumps(
        {
            "type": "event_callback",
            "team_id": TEAM_ID,
            "event_id": f"Ev{ts}",
            "event": {
                "type": "app_mention",
                "user": "U0ASKER",
                "text": f"<@{BOT_USER_ID}> who answers?",
                "ts": ts,
                "channel": CHANNEL,
            },
        }
    )
    headers = {"Content-Type": "application/json", **signed_headers(body, secret="secret")}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as sent,
    ):
        return sent.status
