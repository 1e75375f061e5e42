"""Stop requests reach every process that shares the store: on Redis a request forwarded by
one process is heard by the others (and by itself); the embedded store serves one process,
so there is nobody to forward to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from bot.state import State
from tests.agent.support import wait_for
from tests.state.conftest import OpenState


@asynccontextmanager
async def listening(state: State) -> AsyncIterator[asyncio.Queue[dict[str, Any]]]:
    """What `state` hears, from the moment it listens (subscribed before this yields)."""
    heard: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    ready = asyncio.Event()

    async def listen() -> None:
        incoming = state.stops.incoming()
        first = asyncio.ensure_future(anext(incoming))
        ready.set()
        await heard.put(await first)
        async for request in incoming:
            await heard.put(request)

    task = asyncio.create_task(listen())
    await ready.wait()
    try:
        yield heard
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def forward_until_heard(state: State, request: dict[str, Any]) -> None:
    # A subscription is in place once a publish reaches it; Redis says how many heard one.
    await wait_for(lambda: state.stops.forward(request), timeout_s=5.0)


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_a_request_forwarded_by_one_process_is_heard_by_the_others(
    open_backend: OpenState,
) -> None:
    here, there = await open_backend(), await open_backend()
    async with listening(there) as heard:
        await forward_until_heard(here, {"value": "T:C1:1.0", "user": "U1"})
        async with asyncio.timeout(5):
            assert await heard.get() == {"value": "T:C1:1.0", "user": "U1"}


@pytest.mark.parametrize("backend", ["redis"], indirect=True)
async def test_a_request_nobody_listens_for_is_not_heard(open_backend: OpenState) -> None:
    state = await open_backend()
    assert await state.stops.forward({"value": "T:C1:1.0"}) is False


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_embedded_store_has_nobody_to_forward_to(state: State) -> None:
    assert await state.stops.forward({"value": "T:C1:1.0"}) is False
