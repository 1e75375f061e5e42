"""Cells say exactly what the server holds, in a short JSON-safe form."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from asyncmy.constants import FIELD_TYPE

from bot.db import Database
from bot.db.cells import render_cell
from bot.db.types import Cell

# (value as asyncmy hands it over, the column's type code, the cell, why)
RENDERED = [
    (None, FIELD_TYPE.VAR_STRING, None, "NULL stays null"),
    (42, FIELD_TYPE.LONG, 42, "integers stay numbers"),
    (18446744073709551615, FIELD_TYPE.LONGLONG, 18446744073709551615, "no float rounding"),
    (1.5, FIELD_TYPE.DOUBLE, 1.5, "floats stay floats"),
    (Decimal("12.50"), FIELD_TYPE.NEWDECIMAL, "12.50", "DECIMAL is exact text"),
    (datetime.date(2024, 1, 2), FIELD_TYPE.DATE, "2024-01-02", "ISO date"),
    (
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        FIELD_TYPE.DATETIME,
        "2024-01-02 03:04:05",
        "no microseconds when there are none",
    ),
    (
        datetime.datetime(2024, 1, 2, 3, 4, 5, 120),
        FIELD_TYPE.DATETIME,
        "2024-01-02 03:04:05.000120",
        "microseconds kept",
    ),
    (datetime.timedelta(hours=-12, minutes=-30), FIELD_TYPE.TIME, "-12:30:00", "negative TIME"),
    (
        datetime.timedelta(hours=838, minutes=59, seconds=59),
        FIELD_TYPE.TIME,
        "838:59:59",
        "TIME past 24 hours",
    ),
    (b"\x02\x01", FIELD_TYPE.BIT, 513, "BIT is the number stored"),
    (b"\x00\x01\xff", FIELD_TYPE.BLOB, "<3 bytes 0x0001ff>", "bytes are never raw"),
    (
        bytes(range(20)),
        FIELD_TYPE.BLOB,
        "<20 bytes 0x000102030405060708090a0b0c0d0e0f…>",
        "long bytes: length and a hex prefix",
    ),
    ({"b", "a"}, FIELD_TYPE.SET, "a,b", "a SET as its comma list"),
    ("x" * 10, FIELD_TYPE.VAR_STRING, "x" * 10, "short text unchanged"),
    ("x" * 25, FIELD_TYPE.VAR_STRING, "x" * 20 + "…[+5 chars]", "long text cut with a marker"),
]


@pytest.mark.parametrize(
    ("value", "type_code", "cell", "reason"), RENDERED, ids=[r[3] for r in RENDERED]
)
def test_values_render_as_cells(value: Any, type_code: int, cell: Cell, reason: str) -> None:
    assert render_cell(value, type_code, cell_chars=20) == cell


TYPES_TABLE = """CREATE TABLE kinds (
    dec_col DECIMAL(20,6), date_col DATE, dt_col DATETIME, dt6_col DATETIME(6),
    ts_col TIMESTAMP NULL, time_col TIME, long_time TIME, json_col JSON, bit_col BIT(10),
    blob_col BLOB, varbinary_col VARBINARY(20), text_col TEXT, set_col SET('a','b','c'),
    enum_col ENUM('small','large'), year_col YEAR, double_col DOUBLE, big_col BIGINT UNSIGNED,
    null_col INT, emoji_col VARCHAR(20)
)"""
INSERT_ROW = """INSERT INTO kinds VALUES (
    12345678901234.123456, '2024-01-02', '2024-01-02 03:04:05', '2024-01-02 03:04:05.123456',
    '2024-01-02 03:04:05', '-12:30:00', '838:59:59', '{"a": [1, 2]}', b'1000000001',
    x'0001ff', 'hello', REPEAT('t', 500), 'a,c', 'large', 2024, 1.5, 18446744073709551615,
    NULL, '🐬 dolphin'
)"""
EXPECTED = {
    "dec_col": "12345678901234.123456",
    "date_col": "2024-01-02",
    "dt_col": "2024-01-02 03:04:05",
    "dt6_col": "2024-01-02 03:04:05.123456",
    "ts_col": "2024-01-02 03:04:05",
    "time_col": "-12:30:00",
    "long_time": "838:59:59",
    "json_col": '{"a": [1, 2]}',
    "bit_col": 513,
    "blob_col": "<3 bytes 0x0001ff>",
    "varbinary_col": "<5 bytes 0x68656c6c6f>",
    "text_col": "t" * 200 + "…[+300 chars]",
    "set_col": "a,c",
    "enum_col": "large",
    "year_col": 2024,
    "double_col": 1.5,
    "big_col": 18446744073709551615,
    "null_col": None,
    "emoji_col": "🐬 dolphin",
}


async def test_every_column_type_renders_faithfully_from_the_server(scratch: Database) -> None:
    await scratch.execute([TYPES_TABLE, INSERT_ROW], read_only=False, limit=1)

    execution = await scratch.execute(["SELECT * FROM kinds"], read_only=True, limit=1)

    result = execution.last_result
    assert result is not None
    assert dict(zip(result.columns, result.rows[0], strict=True)) == EXPECTED
