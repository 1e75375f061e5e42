"""The grant an approval gives is bound to its SQL and session, and carries the rows each
statement may write: what the impact stated, plus the margin; the unknown bound where the
impact had no number, or did not state the statement."""

from __future__ import annotations

import time

import pytest

from bot.changes.grants import mint_grant
from bot.changes.types import PendingApproval
from bot.config import Approvals, Settings
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.state import GrantScope, State

FIRST = "UPDATE orders SET status = 'x' WHERE id = 11"
SECOND = "DELETE FROM orders WHERE id = 12"


def approved(sql: str, impact: Impact | None) -> PendingApproval:
    return PendingApproval(
        id="p-1",
        session_id="s-1",
        tool_call_id="",
        database="shop-staging",
        environment="staging",
        risk="write",
        sql=sql,
        requester="U0ASKER",
        created_at=time.time(),
        impact=impact,
    )


def stated(sql: str, rows: int | None, count: RowCount) -> StatementImpact:
    return StatementImpact(sql, sql.split()[0], rows, count)


CASES = [
    # (sql, impact, margin, the grant's bounds, why)
    (FIRST, Impact((stated(FIRST, 1, RowCount.EXACT),)), 0, (1,), "what the impact stated"),
    (FIRST, Impact((stated(FIRST, 0, RowCount.EXACT),)), 0, (0,), "0 is a bound"),
    (FIRST, Impact((stated(FIRST, 1, RowCount.EXACT),)), 2, (3,), "plus the margin"),
    (FIRST, None, 0, (50,), "no impact: the unknown bound"),
    (
        f"{FIRST}; {SECOND}",
        Impact((stated(FIRST, 1, RowCount.EXACT), stated(SECOND, None, RowCount.UNKNOWN))),
        0,
        (1, 50),
        "one bound per statement; an unknown count gets the unknown bound",
    ),
]


@pytest.mark.parametrize(
    ("sql", "impact", "margin", "bounds", "why"), CASES, ids=[c[-1] for c in CASES]
)
async def test_an_approval_grants_its_sql_within_the_rows_its_impact_stated(
    state: State,
    sql: str,
    impact: Impact | None,
    margin: int,
    bounds: tuple[int, ...],
    why: str,
) -> None:
    settings = Settings(databases=[], approvals=Approvals(row_margin=margin, max_rows_unknown=50))
    pending = approved(sql, impact)

    await mint_grant(state.grants, settings, pending, GrantScope.ONCE, "U0APPROVER")

    assert await state.grants.claim("s-1", "shop-staging", f"{FIRST}; UPDATE") is None, why
    claim = await state.grants.claim("s-1", "shop-staging", sql)
    assert claim is not None, why
    assert (claim.bounds, claim.approver, claim.pending_id) == (bounds, "U0APPROVER", "p-1"), why
    assert await state.grants.claim("s-1", "shop-staging", sql) is None, why  # once
