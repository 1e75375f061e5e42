"""Seen events: the first delivery is claimed, every redelivery is refused."""

from __future__ import annotations

import asyncio

from bot.state import State
from tests.state.conftest import Clock


async def test_a_name_is_claimed_once(state: State) -> None:
    assert await state.seen_events.claim("event:E1")
    assert not await state.seen_events.claim("event:E1")


async def test_a_claim_of_several_names_fails_when_any_was_seen(state: State) -> None:
    assert await state.seen_events.claim("event:E1", "message:C1:1.0")
    assert not await state.seen_events.claim("event:E2", "message:C1:1.0")
    # All or nothing: the refused claim marked nothing.
    assert await state.seen_events.claim("event:E2")


async def test_racing_deliveries_claim_one_message_once(state: State) -> None:
    wins = await asyncio.gather(
        *(state.seen_events.claim(f"event:E{n}", "message:C1:1.0") for n in range(30))
    )
    assert wins.count(True) == 1


async def test_old_events_are_forgotten(state: State, clock: Clock) -> None:
    assert await state.seen_events.claim("event:old")
    clock.advance(2 * 86400)
    await state.pruner().prune_pass()
    if not state.shared:  # on Redis the key expires after a day by itself
        assert await state.seen_events.claim("event:old")


async def test_a_burst_of_claims_beyond_the_store_connections_all_succeed(state: State) -> None:
    # A burst of events (hundreds of threads at once on one process) while the Stop
    # listener holds a connection of its own: each claim waits for a free connection
    # rather than failing with "Too many connections".
    async def listen() -> None:
        async for _ in state.stops.incoming():
            pass

    listener = asyncio.create_task(listen())
    try:
        async with asyncio.timeout(30):
            wins = await asyncio.gather(
                *(state.seen_events.claim(f"event:B{n}") for n in range(300)),
                return_exceptions=True,
            )
    finally:
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
    assert wins == [True] * 300, {repr(w) for w in wins if w is not True}
