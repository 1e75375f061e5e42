"""Key lists are written directly, not through a sqlglot tree, and say byte for byte what the
tree said: every awkward value's literal, and the whole `rows_by_key` text, single and
composite keys, are compared with what sqlglot writes for the same value and tree."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from sqlglot import exp

from bot.sql.undo import (
    TableName,
    key_list_sql,
    literal,
    literal_sql,
    rows_by_key,
    rows_in_key_list,
)

AWKWARD = [
    # (value, why it is awkward)
    (None, "NULL, which = never matches"),
    (True, "a bool is an int subclass"),
    (False, "a bool that is zero"),
    (0, "zero"),
    (-5, "a negative number, which sqlglot writes as a negation"),
    (18446744073709551615, "BIGINT UNSIGNED's largest"),
    (-9223372036854775808, "BIGINT's smallest"),
    (Decimal("20.00"), "a decimal keeps its scale"),
    (Decimal("-1.50"), "a negative decimal"),
    (Decimal("0E-10"), "a zero DECIMAL(20,10) as the driver returns it"),
    (Decimal("1.000E-7"), "a decimal that str() writes with an exponent"),
    (Decimal("-0"), "negative zero decimal"),
    (0.1, "a float that does not round-trip through fewer digits"),
    (-0.0, "negative zero float"),
    (1e20, "a float that repr writes with an exponent"),
    (1.5e-7, "a small float"),
    ("", "the empty string"),
    ("plain", "a plain string"),
    ("it's", "a single quote"),
    ("''", "two single quotes"),
    ('say "hi"', "double quotes"),
    ("back\\slash", "a backslash: hex, whatever the sql_mode"),
    ("\\", "a lone backslash"),
    ("ends with \\", "a trailing backslash"),
    ("line\nbreak\ttab\rreturn", "control characters"),
    ("nul\x00byte", "a NUL character"),
    ("\x1a", "Ctrl-Z"),
    ("%_", "LIKE's wildcards"),
    ("`id`", "backticks"),
    ("naïve café", "accented letters"),
    ("日本語", "CJK"),
    ("🙂 emoji", "a four-byte character"),
    ("\u200b", "a zero-width space"),
    ("it's \\ 日本", "a quote, a backslash and unicode together"),
    (b"", "empty bytes"),
    (b"\x00\xff", "binary with NUL and a high byte"),
    (b"'\\", "binary holding a quote and a backslash"),
    (bytearray(b"ab"), "a bytearray"),
    (datetime.datetime(2026, 1, 2, 3, 4, 5, 6), "a datetime with microseconds"),
    (datetime.datetime(2026, 1, 2), "a datetime at midnight"),
    (datetime.date(2026, 1, 2), "a date"),
    (datetime.time(3, 4, 5), "a time"),
    (datetime.time(3, 4, 5, 120), "a time with microseconds"),
    (datetime.timedelta(hours=-1, seconds=1), "a negative TIME"),
    (datetime.timedelta(hours=838, minutes=59, seconds=59), "TIME's largest"),
    (datetime.timedelta(0), "a zero TIME"),
]
IDS = [why for _, why in AWKWARD]


@pytest.mark.parametrize(("value", "why"), AWKWARD, ids=IDS)
def test_a_literal_written_directly_is_sqlglots_literal(value: Any, why: str) -> None:
    assert literal_sql(value) == literal(value).sql(dialect="mysql"), why


def _through_a_tree(
    table: TableName, key: Sequence[str], keys: Sequence[Sequence[Any]], *, lock: bool
) -> str:
    """How the key list was written before: a sqlglot tree of every key, rendered."""

    def column(name: str) -> exp.Column:
        return exp.column(exp.to_identifier(name, quoted=True))

    values = [tuple(map(literal, row)) for row in keys]
    if len(key) == 1:
        condition: exp.Expression = column(key[0]).isin(*(row[0] for row in values))
    else:
        columns = exp.Tuple(expressions=[column(name) for name in key])
        condition = columns.isin(*(exp.Tuple(expressions=list(row)) for row in values))
    select = exp.select(exp.Star()).from_(table.node()).where(condition)
    if lock:
        select = select.lock(update=True)
    return select.sql(dialect="mysql")


KEY_LISTS = [
    # (table, key, keys, lock, why)
    (TableName(None, "t"), ("id",), [(v,) for v, _ in AWKWARD], True, "every value, one column"),
    (TableName("s", "t"), ("id",), [(1,)], False, "one key, a schema, no lock"),
    (TableName("we`ird", "ta ble"), ("co`l",), [(1,), (2,)], True, "backticks in names"),
    (
        TableName(None, "t"),
        ("a", "b"),
        [(v, w) for (v, _), (w, _) in zip(AWKWARD, reversed(AWKWARD), strict=True)],
        True,
        "every value in a composite key",
    ),
    (
        TableName(None, "t"),
        ("a", "b", "c"),
        [(1, "x", None), (None, b"\x00", Decimal("-1.5"))],
        False,
        "three columns with NULLs",
    ),
]


@pytest.mark.parametrize(
    ("table", "key", "keys", "lock", "why"), KEY_LISTS, ids=[row[-1] for row in KEY_LISTS]
)
def test_a_key_list_joined_directly_is_the_trees_text(
    table: TableName, key: Sequence[str], keys: Sequence[Sequence[Any]], lock: bool, why: str
) -> None:
    direct = rows_by_key(table, key, keys, lock=lock)
    assert direct == _through_a_tree(table, key, keys, lock=lock), why


def test_literal_keys_from_an_insert_are_written_as_the_tree_wrote_them() -> None:
    keys = [
        (exp.Literal.number(7), exp.Literal.string("it's")),
        (exp.Null(), exp.Literal.number(-2)),
    ]
    direct = rows_by_key(TableName(None, "t"), ("a", "b"), keys, lock=True, literal_keys=True)
    columns = exp.Tuple(expressions=[exp.column(exp.to_identifier(n, quoted=True)) for n in "ab"])
    tree = exp.select(exp.Star()).from_(TableName(None, "t").node())
    tree = tree.where(columns.isin(*(exp.Tuple(expressions=list(row)) for row in keys)))
    assert direct == tree.lock(update=True).sql(dialect="mysql")


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_key_lists_written_in_slices_join_into_the_whole_list(size: int) -> None:
    key, keys = ("a", "b"), [(n, f"it's {n}") for n in range(7)]
    slices = [key_list_sql(key, keys[start : start + size]) for start in range(0, 7, size)]
    joined = rows_in_key_list(TableName(None, "t"), key, ", ".join(slices), lock=True)
    assert joined == rows_by_key(TableName(None, "t"), key, keys, lock=True)
