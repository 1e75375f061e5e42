"""The audit log keeps every decision in order and filters by time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from bot.state import State
from bot.state.audit import JOURNAL_FILE
from tests.state.conftest import Clock


async def test_records_come_back_in_order_with_every_field(state: State) -> None:
    audit = state.audit
    for n in range(3):
        await audit.record(
            session_id="T:C:1",
            requester="U1",
            approver="U2" if n else None,
            database="shop",
            environment="staging",
            risk="write",
            sql=f"DELETE FROM t WHERE id = {n}",
            outcome="executed",
            rows=n,
            duration_ms=1.5,
        )
    records = await audit.since(None)
    assert [r["sql"] for r in records] == [f"DELETE FROM t WHERE id = {n}" for n in range(3)]
    assert records[1]["approver"] == "U2" and records[1]["rows"] == 1
    assert set(records[0]) >= {
        "time",
        "session_id",
        "requester",
        "approver",
        "database",
        "environment",
        "risk",
        "sql",
        "outcome",
        "rows",
        "error",
        "duration_ms",
    }


async def record(state: State, sql: str = "SELECT 1") -> None:
    await state.audit.record(
        session_id="s",
        requester="U1",
        approver=None,
        database="d",
        environment="staging",
        risk="read_only",
        sql=sql,
        outcome="executed",
    )


async def test_since_filters_out_older_records(state: State) -> None:
    audit = state.audit
    await record(state)
    assert len(await audit.since(datetime.now(UTC) - timedelta(minutes=1))) == 1
    assert await audit.since(datetime.now(UTC) + timedelta(minutes=1)) == []


async def test_since_cuts_by_each_records_time(state: State, clock: Clock) -> None:
    clock.advance(-7200)
    await record(state, "SELECT 'two hours ago'")
    clock.advance(7200)
    await record(state, "SELECT 'now'")
    recent = await state.audit.since(datetime.fromtimestamp(clock.now - 3600, UTC))
    assert [r["sql"] for r in recent] == ["SELECT 'now'"]


async def test_every_record_is_also_a_json_line_in_the_journal(state: State, tmp_path) -> None:
    await record(state, "SELECT 1")
    await record(state, "SELECT 2")
    journal = tmp_path / "state" / JOURNAL_FILE
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    assert [line["sql"] for line in lines] == ["SELECT 1", "SELECT 2"]
    assert journal.stat().st_mode & 0o777 == 0o600


async def test_records_past_the_retention_are_pruned(state: State, clock: Clock) -> None:
    await record(state, "SELECT 'old'")
    clock.advance(366 * 86400)
    await record(state, "SELECT 'new'")
    await state.pruner().prune_pass()
    assert [r["sql"] for r in await state.audit.since(None)] == ["SELECT 'new'"]
