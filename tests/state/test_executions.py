"""Write-ahead records: executing → committing → finished; what a stop leaves unfinished is
found at start, once; a thread grant held by a running execution matches nothing else."""

from __future__ import annotations

import asyncio

from bot.state import State
from bot.state.executions import ExecutionRecord, Phase, UndoRecord
from bot.state.grants import GrantScope
from tests.state.conftest import Clock

SQL = "UPDATE orders SET status = 'shipped' WHERE id = 7"


def record(execution_id: str, started_at: float = 1.0) -> ExecutionRecord:
    return ExecutionRecord(
        id=execution_id,
        session_id="s1",
        database="shop",
        environment="staging",
        sql=SQL,
        requester="U1",
        approver="U2",
        grant_id="g1",
        transactional=True,
        started_at=started_at,
    )


async def test_a_record_moves_from_executing_to_finished(state: State) -> None:
    executions = state.executions
    await executions.begin(record("e1"))
    assert (await executions.get("e1")).phase is Phase.EXECUTING
    await executions.committing("e1")
    assert (await executions.get("e1")).phase is Phase.COMMITTING
    await executions.finish("e1", "executed", undo_id="u1")
    done = await executions.get("e1")
    assert (done.phase, done.outcome, done.undo_id) == (Phase.FINISHED, "executed", "u1")
    assert await executions.unfinished() == []


async def test_unfinished_records_are_found_oldest_first_until_interrupted(
    state: State,
) -> None:
    executions = state.executions
    await executions.begin(record("late", started_at=2.0))
    await executions.begin(record("early", started_at=1.0))
    await executions.committing("late")
    assert [r.id for r in await executions.unfinished()] == ["early", "late"]
    for item in await executions.unfinished():
        await executions.interrupt(item.id, "outcome unknown")
    assert await executions.unfinished() == []
    assert (await executions.get("late")).phase is Phase.INTERRUPTED


async def test_an_undo_record_round_trips(state: State) -> None:
    executions = state.executions
    undo = UndoRecord("u1", "e1", "s1", "shop", SQL, 1.0, ({"kind": "UPDATE"},))
    await executions.save_undo(undo)
    assert await executions.undo("u1") == undo
    assert await executions.undo("nope") is None


async def test_a_held_thread_grant_matches_no_other_execution_until_released(
    state: State,
) -> None:
    grants = state.grants
    await grants.mint("s1", "shop", SQL, GrantScope.THREAD, "U2", bounds=[1])
    claims = await asyncio.gather(*(grants.claim("s1", "shop", SQL) for _ in range(5)))
    held = [claim for claim in claims if claim is not None]
    assert len(held) == 1 and held[0].bounds == (1,)
    await grants.release(held[0].id)
    assert await grants.claim("s1", "shop", SQL) is not None


async def test_grants_held_when_the_bot_stopped_are_dropped_at_start(state: State) -> None:
    grants = state.grants
    await grants.mint("s1", "shop", SQL, GrantScope.THREAD, "U2")
    assert await grants.claim("s1", "shop", SQL) is not None
    assert await grants.drop_held() == 1
    assert await grants.claim("s1", "shop", SQL) is None


async def test_finished_records_are_pruned_with_the_audit_and_open_ones_stay(
    state: State, clock: Clock
) -> None:
    await state.executions.begin(record("done", started_at=clock.now))
    await state.executions.finish("done", "executed")
    await state.executions.begin(record("open", started_at=clock.now))
    clock.advance(366 * 86400)
    await state.pruner().prune_pass()
    if not state.shared:  # Redis expires finished records by itself
        assert await state.executions.get("done") is None
    assert [r.id for r in await state.executions.unfinished()] == ["open"]


async def test_an_unfinished_record_is_interrupted_by_one_of_the_processes_starting_at_once(
    state: State,
) -> None:
    await state.executions.begin(record("e1"))
    claims = await asyncio.gather(
        *(state.executions.interrupt("e1", "outcome unknown") for _ in range(10))
    )
    assert claims.count(True) == 1
    assert not await state.executions.interrupt("e1", "outcome unknown")  # reported already
    assert (await state.executions.get("e1")).phase is Phase.INTERRUPTED
