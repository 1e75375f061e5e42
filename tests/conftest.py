"""Shared fixtures. Tests that need MariaDB take `mysql_url`, tests that need Redis take
`redis_url`; when the server is unreachable they skip with a loud reason locally and fail
under CI=true."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import NoReturn

import asyncmy
import pytest

from bot.config import ConnectionTarget, Settings
from bot.state import State, open_state
from tests.private_redis import PrivateRedis
from tests.redis_keys import forget_keys
from tests.schemas import PREFIX, RUN_SUFFIX

MYSQL_URL = os.environ.get("DBAGENT_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS_URL = os.environ.get("DBAGENT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# The key that signs grants, pending approvals and forwarded Stops (bot.state.seal): every
# store the tests open uses it, as a deployment does; subprocesses are handed it too.
STATE_KEY = "tests-state-key-" + "0123456789abcdef" * 2
os.environ.setdefault("DBAGENT_STATE_KEY", STATE_KEY)

_reachable: bool | None = None
_reason = ""


async def _probe(url: str) -> tuple[bool, str]:
    target = ConnectionTarget.parse(url)
    try:
        connection = await asyncio.wait_for(
            asyncmy.connect(
                host=target.host,
                port=target.port,
                user=target.user,
                password=target.password.get_secret_value(),
                database=target.schema_name,
                connect_timeout=3,
            ),
            timeout=5,
        )
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    connection.close()
    return True, ""


def unavailable(message: str) -> NoReturn:
    """A service the tests need is down: a failure in CI, a loud skip on a developer's machine."""
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(f"!!! SKIPPED: {message}")


@pytest.fixture
async def mysql_url() -> str:
    """URL of the test MariaDB (DBAGENT_TEST_MYSQL_URL, default root@127.0.0.1:3306/test)."""
    global _reachable, _reason
    if _reachable is None:
        _reachable, _reason = await _probe(MYSQL_URL)
    if not _reachable:
        message = f"MariaDB at {ConnectionTarget.parse(MYSQL_URL)} is unreachable ({_reason})"
        unavailable(message)
    return MYSQL_URL


async def _drop_run_schemas(url: str) -> None:
    target = ConnectionTarget.parse(url)
    connection = await asyncmy.connect(
        host=target.host,
        port=target.port,
        user=target.user,
        password=target.password.get_secret_value(),
        connect_timeout=3,
    )
    # LIKE treats _ as a wildcard: escape it so only this run's names match.
    like_pattern = PREFIX.replace("_", "\\_") + "%" + RUN_SUFFIX.replace("_", "\\_")
    try:
        async with connection.cursor() as cursor:
            await cursor.execute(
                "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE %s",
                (like_pattern,),
            )
            for (name,) in await cursor.fetchall():
                await cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
    finally:
        connection.close()


@pytest.fixture(scope="session", autouse=True)
def drop_this_runs_schemas_at_the_end() -> Iterator[None]:
    """Every schema this run made (their names end in its suffix) is dropped when it ends."""
    yield
    if _reachable:
        asyncio.run(_drop_run_schemas(MYSQL_URL))


@pytest.fixture
async def state(tmp_path: Path) -> AsyncIterator[State]:
    """An embedded store of its own."""
    opened = await open_state(Settings(dbagent_state_dir=tmp_path / "state", databases=[]))
    yield opened
    await opened.close()


_redis_reachable: bool | None = None
_redis_reason = ""


async def _probe_redis(url: str) -> tuple[bool, str]:
    import redis.asyncio as redis

    client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=3)
    try:
        await client.ping()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}"
    finally:
        await client.aclose()
    return True, ""


@pytest.fixture
async def redis_url() -> str:
    """URL of the test Redis (DBAGENT_TEST_REDIS_URL, default 127.0.0.1:6379/0). Keys must
    carry `redis_prefix`, unique to the test."""
    global _redis_reachable, _redis_reason
    if _redis_reachable is None:
        _redis_reachable, _redis_reason = await _probe_redis(REDIS_URL)
    if not _redis_reachable:
        message = f"Redis at {REDIS_URL} is unreachable ({_redis_reason})"
        unavailable(message)
    return REDIS_URL


@pytest.fixture
async def redis_prefix(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A key prefix unique to this run and test; its keys are deleted at the end."""
    prefix = f"{PREFIX}{RUN_SUFFIX}:{uuid.uuid4().hex[:8]}:"
    yield prefix
    if _redis_reachable:
        await forget_keys(REDIS_URL, prefix)


@pytest.fixture
async def private_redis(tmp_path: Path) -> AsyncIterator[PrivateRedis]:
    """A redis-server of the test's own, which it may stop and start (tests/private_redis.py)."""
    if shutil.which("redis-server") is None:
        unavailable("redis-server is not installed (restart tests start one of their own)")
    server = PrivateRedis(tmp_path / "redis")
    await server.start()
    yield server
    await server.stop()
