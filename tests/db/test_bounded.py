"""An approved change runs in one transaction held to its bound: a statement over it rolls the
whole call back, and a change whose rows moved under it gets no Undo (the bounds themselves:
tests/changes/test_bounds.py)."""

from __future__ import annotations

import pytest

from bot.db import Database
from bot.db.bounded import (
    BoundedRun,
    RolledBack,
    WriteStep,
    run_bounded,
)
from bot.sql.undo import RowChange, TableName
from tests.agent.support import run_statements
from tests.db.support import server_rows


async def test_a_bound_of_zero_rolls_back_a_statement_that_changes_a_row(
    scratch: Database, scratch_url: str
) -> None:
    await run_statements(
        scratch_url, ["CREATE TABLE z (id INT PRIMARY KEY, a INT)", "INSERT INTO z VALUES (1, 0)"]
    )
    step = WriteStep("UPDATE z SET a = 1 WHERE id = 1", 0, None, kind="UPDATE")

    async def before_commit(_: BoundedRun) -> None:
        return None

    with pytest.raises(RolledBack, match="changed 1 row, approved 0"):
        await run_bounded(scratch, [step], max_undo_rows=100, before_commit=before_commit)
    assert await server_rows(scratch_url, "SELECT a FROM z") == [(0,)]


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
