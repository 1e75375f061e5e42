"""The bound of an approved statement is what its card stated, plus the margin."""

from __future__ import annotations

import pytest

from bot.db import Database
from bot.db.bounded import BoundedRun, WriteStep, bounds_for, run_bounded
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.sql.undo import RowChange, TableName
from tests.agent.support import run_statements

SQL = "UPDATE orders SET status = 'x' WHERE status = 'pending'"

BOUNDS = [
    # (count on the card, rows on the card, margin, the bound)
    (RowCount.EXACT, 137, 0, 137),
    (RowCount.EXACT, 137, 2, 139),
    (RowCount.UP_TO, 5, 1, 6),  # inserted and updated rows each, not their sum doubled
    (RowCount.ESTIMATE, 900, 10, 910),
    (RowCount.UNKNOWN, None, 10, 1000),  # unknown: the configured most, no margin
]


@pytest.mark.parametrize(("count", "rows", "margin", "bound"), BOUNDS)
def test_a_statements_bound_is_what_its_card_stated(
    count: RowCount, rows: int | None, margin: int, bound: int
) -> None:
    impact = Impact((StatementImpact(sql=SQL, kind="UPDATE", rows=rows, count=count),))
    assert bounds_for(impact, [SQL], margin=margin, unknown=1000) == (bound,)


def test_a_statement_the_card_did_not_state_gets_the_unknown_bound() -> None:
    impact = Impact(
        (StatementImpact(sql="DELETE FROM t", kind="DELETE", rows=1, count=RowCount.EXACT),)
    )
    assert bounds_for(impact, [SQL], margin=0, unknown=7) == (7,)
    assert bounds_for(None, [SQL, SQL], margin=0, unknown=7) == (7, 7)


async def test_a_delete_whose_rows_are_not_the_rows_read_before_it_has_no_undo(
    scratch: Database, scratch_url: str
) -> None:
    # The before-image and the DELETE pick rows by the same WHERE, but not necessarily the
    # same rows (RAND(), a LIMIT without ORDER BY, a literal the parser rewrites): here the
    # read takes row 10 while the DELETE removes row 1. Equal counts prove nothing.
    await run_statements(
        scratch_url,
        ["CREATE TABLE t (id INT PRIMARY KEY, a INT)", "INSERT INTO t VALUES (1, 1), (10, 0)"],
    )
    change = RowChange(
        kind="DELETE",
        table=TableName(None, "t"),
        locking_read="SELECT * FROM t WHERE id = 10 FOR UPDATE",
    )
    step = WriteStep("DELETE FROM t WHERE id = 1", 1, change)

    async def before_commit(_: BoundedRun) -> None:
        return None

    done = await run_bounded(scratch, [step], max_undo_rows=100, before_commit=before_commit)
    assert done.undo_reason, done.images
