"""Every repository test runs on both backends: embedded SQLite and Redis (a key prefix of
its own on the test server)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import Settings
from bot.state import State, open_state


class Clock:
    """Time the test moves by hand; it starts now, since Redis expires keys by its own clock."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


OpenState = Callable[..., Awaitable[State]]


@pytest.fixture(params=["sqlite", "redis"])
def backend(request: pytest.FixtureRequest) -> tuple[str | None, str]:
    """(DBAGENT_STATE_URL, Redis key prefix) of this test's backend."""
    if request.param == "sqlite":
        return None, "unused:"
    return request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")


@pytest.fixture
async def open_backend(
    backend: tuple[str | None, str], tmp_path: Path, clock: Clock
) -> AsyncIterator[OpenState]:
    """Opens the store of this test's backend (again: a restart); closes all at the end."""
    url, prefix = backend
    opened: list[State] = []

    async def open_it(**settings: Any) -> State:
        values: dict[str, Any] = {
            "dbagent_state_dir": tmp_path / "state",
            "dbagent_state_url": url,
            "databases": [],
            **settings,
        }
        state = await open_state(Settings(**values), redis_prefix=prefix, clock=clock)
        opened.append(state)
        return state

    yield open_it
    for state in opened:
        await state.close()


@pytest.fixture
async def state(open_backend: OpenState) -> State:
    return await open_backend()
