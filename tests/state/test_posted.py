"""Cards and questions still showing buttons: found by session from any process and after
a restart, closed exactly once, and forgotten with the proposals."""

from __future__ import annotations

import asyncio

from bot.config import Retention
from bot.state import State
from bot.state.posted import PostedMessage
from tests.state.conftest import Clock, OpenState

DAY = 86400.0


def card(item_id: str, session_id: str = "T:C:1.0", posted_at: float = 1.0) -> PostedMessage:
    return PostedMessage(
        kind="card",
        id=item_id,
        session_id=session_id,
        channel="C1",
        ts=f"{posted_at:.6f}",
        posted_at=posted_at,
        item={"id": item_id, "sql": "UPDATE t SET a = 1 WHERE id = 2"},
    )


async def test_a_posted_card_is_found_by_its_session_oldest_first(state: State) -> None:
    await state.posted.remember(card("p2", posted_at=2.0))
    await state.posted.remember(card("p1", posted_at=1.0))
    await state.posted.remember(card("p3", session_id="T:C:9.0", posted_at=3.0))
    assert [m.id for m in await state.posted.open_in("T:C:1.0", "card")] == ["p1", "p2"]
    assert await state.posted.open_in("T:C:1.0", "question") == []  # kinds apart
    assert await state.posted.get("card", "p1") == card("p1", posted_at=1.0)


async def test_a_card_is_taken_once_however_many_replicas_race_for_it(state: State) -> None:
    await state.posted.remember(card("p1"))
    takes = await asyncio.gather(*(state.posted.take("card", "p1") for _ in range(20)))
    assert [taken for taken in takes if taken is not None] == [card("p1")]
    assert await state.posted.open_in("T:C:1.0", "card") == []
    assert await state.posted.get("card", "p1") is None


async def test_posted_cards_are_kept_across_a_restart(open_backend: OpenState) -> None:
    first = await open_backend()
    await first.posted.remember(card("p1"))
    await first.close()
    again = await open_backend()
    assert [m.id for m in await again.posted.open_in("T:C:1.0", "card")] == ["p1"]


async def test_posted_cards_are_forgotten_after_the_proposals_retention(
    open_backend: OpenState, clock: Clock
) -> None:
    # A lifetime Redis can let pass in a test: 0.5 s.
    state = await open_backend(retention=Retention(proposals_days=0.5 / DAY))
    await state.posted.remember(card("old", posted_at=clock.now))
    if state.shared:  # Redis expires them by itself
        for _ in range(200):
            if await state.posted.get("card", "old") is None:
                break
            await asyncio.sleep(0.02)
    else:
        clock.advance(1.0)
        removed, _ = await state.pruner().prune_pass()
        assert removed.get("posted") == 1
    assert await state.posted.get("card", "old") is None
    assert await state.posted.open_in("T:C:1.0", "card") == []
