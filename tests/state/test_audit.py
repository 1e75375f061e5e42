"""The audit log keeps every decision in order and filters by time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.state.audit import AuditLog


async def test_records_come_back_in_order_with_every_field(store):
    audit = AuditLog(store)
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


async def test_since_filters_out_older_records(store):
    audit = AuditLog(store)
    await audit.record(
        session_id="s",
        requester="U1",
        approver=None,
        database="d",
        environment="staging",
        risk="read_only",
        sql="SELECT 1",
        outcome="executed",
    )
    assert len(await audit.since(datetime.now(UTC) - timedelta(minutes=1))) == 1
    assert await audit.since(datetime.now(UTC) + timedelta(minutes=1)) == []
