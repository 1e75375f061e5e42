"""`dbagent check` on Redis state: keys evicted when full, memory close to maxmemory, and no
persistence are named — against private Redis servers started for the test (the shared one is
left as it is)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
import redis.asyncio as redis

from bot.check import Mark, run_checks
from bot.check.lines import Line
from bot.config import Settings
from tests.fakes.local import free_port
from tests.waiting import until

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server")

PrivateRedis = Callable[..., AbstractAsyncContextManager[str]]


@pytest.fixture
def private_redis(tmp_path: Path) -> PrivateRedis:
    """Start a Redis of the test's own with these settings; its URL while the block runs."""

    @contextlib.asynccontextmanager
    async def start(*options: str) -> AsyncIterator[str]:
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(tmp_path),
            *options,
            stdout=asyncio.subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        client = redis.Redis.from_url(url)

        async def answers() -> bool:
            try:
                return bool(await client.ping())
            except redis.ConnectionError:
                return False

        try:
            await until(answers)
            yield url
        finally:
            await client.aclose()
            process.terminate()
            await process.wait()

    return start


async def redis_lines(url: str, tmp_path: Path) -> dict[str, Line]:
    settings = Settings(dbagent_state_url=url, dbagent_config=tmp_path / "none.toml")
    lines = await run_checks(settings)
    return {line.subject: line for line in lines if line.subject in STATE_SUBJECTS}


STATE_SUBJECTS = ("state", "Redis memory", "Redis persistence")

# (redis-server options, subject → (mark, words of the line), reason)
SERVERS = [
    (
        ("--save", "", "--appendonly", "yes", "--maxmemory-policy", "noeviction"),
        {
            "state": (Mark.PASSED, "answers"),
            "Redis memory": (Mark.PASSED, "no maxmemory"),
            "Redis persistence": (Mark.PASSED, "append-only file on"),
        },
        "what the state wants: nothing evicted, no limit reached, every write kept",
    ),
    (
        ("--save", "60 1", "--appendonly", "no"),
        {"Redis persistence": (Mark.PASSED, "RDB snapshots on")},
        "snapshots only: a restart loses the last minute at most",
    ),
    (
        ("--save", "", "--appendonly", "no"),
        {"Redis persistence": (Mark.WARNING, "a Redis restart loses pending approvals")},
        "nothing kept across a restart",
    ),
    (
        ("--save", "", "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"),
        {
            "state": (Mark.WARNING, "evicts keys when full (maxmemory-policy allkeys-lru)"),
            "Redis memory": (Mark.PASSED, "bytes used of 104,857,600"),
        },
        "keys evicted when full",
    ),
    (
        ("--save", "", "--maxmemory", "1mb", "--maxmemory-policy", "noeviction"),
        {"Redis memory": (Mark.WARNING, "of maxmemory used")},
        "almost full: writes will be refused",
    ),
]


@pytest.mark.parametrize(("options", "expected", "reason"), SERVERS, ids=[s[-1] for s in SERVERS])
async def test_check_names_what_redis_would_lose_or_refuse(
    private_redis: PrivateRedis, tmp_path: Path, options, expected, reason
) -> None:
    async with private_redis(*options) as url:
        lines = await redis_lines(url, tmp_path)
    for subject, (mark, words) in expected.items():
        assert lines[subject].mark is mark, (reason, lines[subject])
        assert words in lines[subject].detail, (reason, lines[subject])
