"""Retention: old records go a small batch at a time, and serving goes on meanwhile."""

from __future__ import annotations

import asyncio

from bot.config import Retention
from bot.state import State
from bot.state.retention import Pruner
from tests.state.conftest import Clock, OpenState

DAY = 86400.0


async def stale_sessions(state: State, clock: Clock, count: int) -> None:
    await asyncio.gather(
        *(
            state.sessions.save(
                {"id": f"old{n}", "status": "idle", "updated_at": clock.now - 40 * DAY}
            )
            for n in range(count)
        )
    )


async def test_zero_days_keeps_records_forever(open_backend: OpenState, clock: Clock) -> None:
    forever = Retention(sessions_days=0, seen_events_days=0, proposals_days=0, audit_days=0)
    state = await open_backend(retention=forever)
    await stale_sessions(state, clock, 3)
    assert await state.seen_events.claim("event:E1")
    clock.advance(400 * DAY)
    removed, left = await state.pruner().prune_pass()
    assert removed == {} and not left
    assert await state.sessions.exists("old0")
    assert not await state.seen_events.claim("event:E1")


async def test_a_backlog_drains_over_several_passes(state: State, clock: Clock) -> None:
    if state.shared:
        return  # on Redis, sessions expire by themselves: no backlog to drain
    await stale_sessions(state, clock, 250)
    pruner = Pruner(state, state.lifetimes, clock, batch=50, budget_s=0.0)
    passes, gone = 0, 0
    while gone < 250:
        removed, left = await pruner.prune_pass()
        assert left  # a zero budget: one batch a pass, the rest later
        assert sum(removed.values()) <= 50
        gone += removed.get("sessions", 0)
        passes += 1
        assert passes < 100
    assert passes >= 5
    assert not any([await state.sessions.exists(f"old{n}") for n in range(250)])


async def test_a_store_call_made_during_a_pass_is_answered_before_the_pass_ends(
    state: State, clock: Clock
) -> None:
    if state.shared:
        return  # nothing to interleave with: Redis prunes by expiry
    await stale_sessions(state, clock, 1000)
    await state.sessions.save({"id": "live", "status": "idle", "updated_at": clock.now})
    pruner = Pruner(state, state.lifetimes, clock, batch=50, budget_s=60.0)
    order: list[str] = []

    async def prune() -> None:
        await pruner.prune_pass()
        order.append("pass done")

    async def read() -> None:
        await asyncio.sleep(0)  # the pass has started
        assert await state.sessions.exists("live")
        order.append("read done")

    await asyncio.gather(prune(), read())
    assert order == ["read done", "pass done"]
    assert not await state.sessions.exists("old999")
