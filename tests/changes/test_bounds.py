"""The bound of an approved statement is what its card stated, plus the margin: one row per
edge, the reason in the row (0 is a bound; "up to N" bounds inserted and updated rows each)."""

from __future__ import annotations

import pytest

from bot.changes.bounds import bounds_for, over_bound
from bot.db.impact_types import Impact, RowCount, StatementImpact
from bot.db.session import RawResult

SQL = "UPDATE orders SET status = 'x' WHERE status = 'pending'"

BOUNDS = [
    # (the card's statement, margin, the bound, why)
    (StatementImpact(SQL, "UPDATE", 0, RowCount.EXACT, total=0), 0, 0, "an exact 0 is a bound"),
    (StatementImpact(SQL, "UPDATE", 0, RowCount.EXACT, total=0), 2, 2, "0 plus the margin"),
    (StatementImpact(SQL, "UPDATE", 137, RowCount.EXACT), 0, 137, "what the card stated"),
    (StatementImpact(SQL, "UPDATE", 137, RowCount.EXACT), 2, 139, "plus the margin"),
    (
        StatementImpact(SQL, "INSERT", 5, RowCount.UP_TO),
        1,
        6,
        "up to N: inserted and updated rows each, not their sum doubled",
    ),
    (StatementImpact(SQL, "UPDATE", 900, RowCount.ESTIMATE), 10, 910, "an estimate"),
    (StatementImpact(SQL, "UPDATE", None, RowCount.UNKNOWN), 10, 1000, "unknown: the most"),
    (
        StatementImpact(SQL, "DELETE", 1, RowCount.EXACT, total=20, written=("19 rows of c",)),
        0,
        20,
        "the total: the statement's row and the 19 its cascade deletes",
    ),
    (
        StatementImpact(SQL, "UPDATE", 1, RowCount.EXACT, total=1, uncounted=("f() writes",)),
        2,
        1003,
        "what is counted, the margin, and the most for what is not",
    ),
]


@pytest.mark.parametrize(("stated", "margin", "bound", "why"), BOUNDS, ids=[b[-1] for b in BOUNDS])
def test_a_statements_bound_is_what_its_card_stated(
    stated: StatementImpact, margin: int, bound: int, why: str
) -> None:
    impact = Impact((stated,))
    assert bounds_for(impact, [SQL], margin=margin, unknown=1000) == (bound,), why


def raw(affected: int, info: str = "") -> RawResult:
    return RawResult(None, (), [], False, affected, None, info)


OVER = [
    # (server's answer, rows written in all, bound, INSERT/REPLACE, refusal or "", why)
    (raw(0), 0, 0, False, "", "0 rows within a bound of 0"),
    (raw(1), 1, 0, False, "changed 1 row, approved 0", "1 row over a bound of 0"),
    (raw(3), 3, 3, False, "", "exactly the bound"),
    (raw(1), 4, 3, False, "wrote 4 rows (with its triggers", "its triggers wrote the rest"),
    (
        raw(6, "Records: 6  Duplicates: 0  Warnings: 0"),
        6,
        3,
        True,
        "inserted 6 rows, approved 3",
        "the source doubled: 6 new rows where the card said up to 3",
    ),
    (
        raw(8, "Records: 4  Duplicates: 4  Warnings: 0"),
        4,
        3,
        True,
        "updated or replaced 4 rows, approved 3",
        "more updated rows than the card's N",
    ),
    (
        raw(6, "Records: 3  Duplicates: 3  Warnings: 0"),
        3,
        3,
        True,
        "",
        "3 updates, counted twice by affected rows, are within up to 3",
    ),
]


@pytest.mark.parametrize(
    ("answer", "written", "bound", "upsert", "refusal", "why"), OVER, ids=[o[-1] for o in OVER]
)
def test_a_statement_over_its_bound_is_refused(
    answer: RawResult, written: int, bound: int, upsert: bool, refusal: str, why: str
) -> None:
    found = over_bound(answer, written, bound, upsert=upsert)
    assert found.startswith(refusal) if refusal else found == "", (why, found)


def test_a_statement_the_card_did_not_state_gets_the_unknown_bound() -> None:
    impact = Impact(
        (StatementImpact(sql="DELETE FROM t", kind="DELETE", rows=1, count=RowCount.EXACT),)
    )
    assert bounds_for(impact, [SQL], margin=0, unknown=7) == (7,)
    assert bounds_for(None, [SQL, SQL], margin=0, unknown=7) == (7, 7)
