"""`python -m bot serve --workers N`: N processes on shared Redis state; refused embedded."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import aiohttp

from tests.fakes.local import free_port

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
