"""The bound of an approved statement is what its card stated, plus the margin."""

from __future__ import annotations

import pytest

from bot.db.bounded import bounds_for
from bot.db.impact_types import Impact, RowCount, StatementImpact

SQL = "UPDATE orders SET status = 'x' WHERE status = 'pending'"

BOUNDS = [
    # (count on the card, rows on the card, margin, the bound)
    (RowCount.EXACT, 137, 0, 137),
    (RowCount.EXACT, 137, 2, 139),
    (RowCount.UP_TO, 5, 1, 11),  # the server counts a replaced or updated row twice
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
