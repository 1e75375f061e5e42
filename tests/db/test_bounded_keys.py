"""A bounded write over keys with awkward values: the after-image is read back by those keys
(written as literals directly, not through a sqlglot tree), matched to the before-image row
for row, and Undo puts every row back exactly."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

from bot.db import Database
from bot.db.bounded import BoundedRun, WriteStep, run_bounded
from bot.db.images import TableImage
from bot.db.undo import plan_undo
from bot.sql.undo import plan_row_change
from tests.agent.support import run_statements
from tests.db.support import server_rows

TABLE = (
    "CREATE TABLE k (b VARBINARY(8) NOT NULL, s VARCHAR(40) CHARACTER SET utf8mb4"
    " COLLATE utf8mb4_bin NOT NULL, d DECIMAL(20,10) NOT NULL, dt DATETIME(6) NOT NULL,"
    " tm TIME(6) NOT NULL, note VARCHAR(20) NULL, v INT NOT NULL,"
    " PRIMARY KEY (b, s, d, dt, tm))"
)
WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5, 6)
ROWS: list[tuple[Any, ...]] = [
    # (b, s, d, dt, tm, note): why the key is awkward
    (b"\x00\xff", "it's", Decimal("-1.5"), WHEN, "-00:59:59", None),  # NUL, quote, negative
    (b"", "back\\slash", Decimal("0"), WHEN, "00:00:00", "x"),  # empty, backslash, zero
    (b"'\\", "日本語 🙂", Decimal("0.0000001234"), WHEN, "838:59:59", "y"),  # tiny decimal
    (b"a", 'say "hi"\n\t', Decimal("12345678.1234567891"), WHEN, "01:02:03.000004", None),
    (b"b", "", Decimal("1E-10"), datetime.datetime(1000, 1, 1), "00:00:00", None),
    (b"c", "\u200b%_`\x1a", Decimal("-0.0000000001"), WHEN, "00:00:00", "z"),
]


async def _table(url: str) -> list[tuple[Any, ...]]:
    return await server_rows(url, "SELECT * FROM k ORDER BY b, s, d, dt, tm")


async def test_a_bounded_update_over_awkward_keys_reads_every_row_back_and_undoes_exactly(
    scratch: Database, scratch_url: str
) -> None:
    await run_statements(scratch_url, [TABLE])
    for row in ROWS:
        await server_rows(scratch_url, "INSERT INTO k VALUES (%s, %s, %s, %s, %s, %s, 0)", row)
    original = await _table(scratch_url)
    sql = "UPDATE k SET v = v + 1, note = CONCAT(IFNULL(note, ''), '!')"

    async def before_commit(_: BoundedRun) -> None:
        return None

    step = WriteStep(sql, len(ROWS), plan_row_change(sql, 100))
    done = await run_bounded(scratch, [step], max_undo_rows=100, before_commit=before_commit)
    assert done.undo_reason == ""
    (image,) = [TableImage.from_json(image.to_json()) for image in done.images]
    assert len(image.before) == len(image.after) == len(ROWS)
    for before, after in zip(image.before, image.after, strict=True):
        assert after[:5] == before[:5] and after[6] == before[6] + 1  # same key, row for row
    assert sorted(map(tuple, await _table(scratch_url))) != sorted(map(tuple, original))

    undo = await plan_undo(scratch, [image])
    assert undo.conflicts == () and len(undo.statements) == len(ROWS)
    await scratch.execute([s.sql for s in undo.statements], read_only=False, limit=1)
    assert await _table(scratch_url) == original
