"""Pending approvals: stored until claimed, claimed exactly once."""

from __future__ import annotations

import asyncio

from bot.state import State
from tests.state.conftest import Clock, OpenState


def pending(pending_id: str, created_at: float) -> dict[str, object]:
    return {"id": pending_id, "created_at": created_at, "sql": "DELETE FROM t", "kind": None}


async def test_a_pending_approval_is_read_until_it_is_claimed(state: State, clock: Clock) -> None:
    await state.pending.add(pending("p1", clock.now))
    assert await state.pending.get("p1") == pending("p1", clock.now)
    assert await state.pending.claim("p1") == pending("p1", clock.now)
    assert await state.pending.get("p1") is None
    assert await state.pending.claim("p1") is None


async def test_fifty_racing_clicks_claim_it_once(state: State, clock: Clock) -> None:
    await state.pending.add(pending("p1", clock.now))
    claims = await asyncio.gather(*(state.pending.claim("p1") for _ in range(50)))
    assert sum(claim is not None for claim in claims) == 1


async def test_a_pending_approval_survives_a_restart(open_backend: OpenState, clock: Clock) -> None:
    first = await open_backend()
    await first.pending.add(pending("p1", clock.now))
    await first.close()
    assert await (await open_backend()).pending.claim("p1") is not None


async def test_old_pending_approvals_are_pruned(state: State, clock: Clock) -> None:
    await state.pending.add(pending("old", clock.now - 8 * 86400))
    await state.pending.add(pending("new", clock.now))
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires them by itself
        assert await state.pending.get("old") is None
    assert await state.pending.get("new") is not None


async def test_waiting_lists_the_undecided_oldest_first(state: State, clock: Clock) -> None:
    await state.pending.add(pending("new", clock.now))
    await state.pending.add(pending("old", clock.now - 60))
    await state.pending.add(pending("gone", clock.now - 30))
    await state.pending.claim("gone")
    assert [record["id"] for record in await state.pending.waiting()] == ["old", "new"]
    assert [record["id"] for record in await state.pending.waiting(limit=1)] == ["old"]
