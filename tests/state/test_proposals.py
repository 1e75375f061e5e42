"""Proposals: SQL behind Run buttons, with the database picked for it."""

from __future__ import annotations

from bot.state import State
from tests.state.conftest import Clock


def proposal(proposal_id: str, created_at: float) -> dict[str, object]:
    return {"id": proposal_id, "created_at": created_at, "sql": "SELECT 1", "chosen": None}


async def test_the_database_picked_is_remembered(state: State, clock: Clock) -> None:
    await state.proposals.add(proposal("a1", clock.now))
    assert await state.proposals.choose("a1", "shop")
    assert await state.proposals.choose("a1", "shop-2")
    assert await state.proposals.get("a1") == {**proposal("a1", clock.now), "chosen": "shop-2"}


async def test_picking_for_a_forgotten_proposal_changes_nothing(state: State) -> None:
    assert not await state.proposals.choose("gone", "shop")
    assert await state.proposals.get("gone") is None


async def test_old_proposals_are_pruned(state: State, clock: Clock) -> None:
    await state.proposals.add(proposal("old", clock.now - 8 * 86400))
    await state.proposals.add(proposal("new", clock.now))
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires them by itself
        assert await state.proposals.get("old") is None
    assert await state.proposals.get("new") is not None
