"""Sessions are stored whole, found by id, listed when left running, forgotten when idle."""

from __future__ import annotations

from bot.state import State
from tests.state.conftest import Clock, OpenState


def record(session_id: str, status: str = "idle", updated_at: float = 0.0) -> dict[str, object]:
    return {"id": session_id, "status": status, "updated_at": updated_at, "messages": [1, "x"]}


async def test_a_saved_session_comes_back_whole(state: State) -> None:
    await state.sessions.save(record("T:C:1"))
    assert await state.sessions.get("T:C:1") == record("T:C:1")
    assert await state.sessions.get("T:C:2") is None


async def test_a_session_survives_a_restart(open_backend: OpenState) -> None:
    first = await open_backend()
    await first.sessions.save(record("T:C:1"))
    await first.close()
    assert await (await open_backend()).sessions.get("T:C:1") == record("T:C:1")


async def test_existence_is_known_without_the_history(state: State) -> None:
    await state.sessions.save(record("T:C:1"))
    assert await state.sessions.exists("T:C:1")
    assert not await state.sessions.exists("T:C:9")


async def test_running_lists_only_the_sessions_last_saved_running(state: State) -> None:
    await state.sessions.save(record("T:C:1", "running"))
    await state.sessions.save(record("T:C:2", "running"))
    await state.sessions.save(record("T:C:3", "idle"))
    await state.sessions.save(record("T:C:2", "awaiting_approval"))
    assert await state.sessions.running() == ["T:C:1"]


async def test_only_sessions_idle_past_their_retention_are_pruned(
    state: State, clock: Clock
) -> None:
    await state.sessions.save(record("T:C:old", updated_at=clock.now - 31 * 86400))
    await state.sessions.save(record("T:C:new", updated_at=clock.now))
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires them by itself, 30 days after the save
        assert not await state.sessions.exists("T:C:old")
    assert await state.sessions.exists("T:C:new")
