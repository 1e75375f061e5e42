"""Requests of MCP clients: settled as their approval is decided, never back to pending, and
an outcome is final."""

from __future__ import annotations

import pytest

from bot.state import State
from bot.state.requests import RequestStatus
from tests.state.conftest import Clock

P, A, D, X, E, F = (
    RequestStatus.PENDING,
    RequestStatus.APPROVED,
    RequestStatus.DENIED,
    RequestStatus.EXPIRED,
    RequestStatus.EXECUTED,
    RequestStatus.FAILED,
)


def request(request_id: str, created_at: float) -> dict[str, object]:
    return {"id": request_id, "created_at": created_at, "status": "pending", "client": "c"}


@pytest.mark.parametrize(
    ("path", "ends_in", "why"),
    [
        ((A, E), E, "approved, then it ran"),
        ((A, F), F, "approved, then it failed"),
        ((D,), D, "denied"),
        ((X,), X, "expired"),
        ((E,), E, "an outcome may come without the approved step (a crash in between)"),
        ((D, A), D, "a denied request is never approved after"),
        ((E, F), E, "an outcome is final"),
        ((A, P), A, "nothing goes back to pending"),
        ((X, A, E), X, "an expired request does not run"),
    ],
)
async def test_a_request_moves_forward_only(
    state: State, clock: Clock, path: tuple[RequestStatus, ...], ends_in: RequestStatus, why: str
) -> None:
    await state.requests.add(request("r1", clock.now))
    for status in path:
        await state.requests.settle("r1", status, last=status.value)
    kept = await state.requests.get("r1")
    assert kept is not None
    assert kept["status"] == ends_in.value, why
    assert kept["last"] == ends_in.value, why  # details come only with a move


async def test_a_note_keeps_the_status(state: State, clock: Clock) -> None:
    await state.requests.add(request("r1", clock.now))
    assert await state.requests.note("r1", card="https://slack/x")
    assert await state.requests.get("r1") == {**request("r1", clock.now), "card": "https://slack/x"}


async def test_an_unknown_request_is_not_settled(state: State) -> None:
    assert not await state.requests.settle("gone", RequestStatus.EXECUTED)
    assert not await state.requests.note("gone", card="x")
    assert await state.requests.get("gone") is None


async def test_old_requests_are_pruned(state: State, clock: Clock) -> None:
    await state.requests.add(request("old", clock.now - 8 * 86400))
    await state.requests.add(request("new", clock.now))
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires them by itself
        assert await state.requests.get("old") is None
    assert await state.requests.get("new") is not None
