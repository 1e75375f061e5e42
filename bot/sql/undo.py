"""Undo's SQL, built from sqlglot ASTs (never by pasting text): the locking read of the rows
an approved UPDATE or DELETE will change, taken from the statement's own WHERE, ORDER BY
and LIMIT; the read of rows by key; and the inverse statements that put a before-image back.

Values are Python values as the driver returned them (int, str, Decimal, float, bytes,
date/time types, None) and become literals that read back as the same value: bytes and
strings holding a backslash go as hex (their meaning would otherwise depend on the server's
sql_mode), numbers as written by `str`/`repr`, which round-trip.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from bot.sql.lexical import rewritten_differently

DIALECT = "mysql"
# Only its string escaping is used (`literal_sql`), which keeps no state between calls.
_GENERATOR = Dialect.get_or_raise(DIALECT).generator()
# Characters its escaping writes as escape sequences; a string without any only doubles '.
_ESCAPED = frozenset(Dialect.get_or_raise(DIALECT).ESCAPED_SEQUENCES) | {"\n"}


@dataclass(frozen=True, slots=True)
class TableName:
    schema: str | None  # as written in the statement; None: the connection's own
    name: str

    def node(self) -> exp.Table:
        db = None if self.schema is None else exp.to_identifier(self.schema, quoted=True)
        return exp.Table(this=exp.to_identifier(self.name, quoted=True), db=db)


@dataclass(frozen=True, slots=True)
class RowChange:
    """How to capture what one statement changes, or why it cannot be captured exactly."""

    kind: str  # UPDATE | DELETE | INSERT
    table: TableName | None
    # UPDATE/DELETE: `SELECT * … WHERE <its WHERE> [ORDER BY … LIMIT …] FOR UPDATE`, capped.
    locking_read: str | None = None
    set_columns: tuple[str, ...] = ()  # UPDATE: the columns it assigns (lower case)
    # INSERT … VALUES with these columns named (empty: the table's order).
    insert_columns: tuple[str, ...] = ()
    insert_rows: tuple[tuple[exp.Expression, ...], ...] = ()
    reason: str = ""  # why there is no exact undo; empty when there is one

    @property
    def exact(self) -> bool:
        return not self.reason


def no_undo(kind: str, reason: str) -> RowChange:
    return RowChange(kind=kind, table=None, reason=reason)


def plan_row_change(sql: str, cap: int, rewritten: str | None = None) -> RowChange:
    """What to read around `sql` (one classified UPDATE, DELETE or INSERT) for its undo.
    ``rewritten`` is what the classifier found (Statement.rewritten); None reads it from
    ``sql``."""
    if rewritten is None:
        rewritten = rewritten_differently(sql)
    if rewritten:
        return no_undo("UNKNOWN", rewritten)
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except SqlglotError:
        return no_undo("UNKNOWN", "the statement could not be parsed for an undo")
    if isinstance(tree, exp.Update):
        return _update(tree, cap)
    if isinstance(tree, exp.Delete):
        return _delete(tree, cap)
    if isinstance(tree, exp.Insert):
        return _insert(tree)
    return no_undo(tree.key.upper(), "only UPDATE, DELETE and INSERT have an undo")


def _single_table(node: exp.Expression | None) -> TableName | None:
    if not isinstance(node, exp.Table) or node.args.get("joins") or not node.name:
        return None
    if node.args.get("catalog") is not None:
        return None
    return TableName(node.args["db"].name if node.args.get("db") else None, node.name)


def _locking_read(tree: exp.Update | exp.Delete, table: TableName, cap: int) -> str:
    source = table.node()
    alias = tree.this.args.get("alias")
    if alias is not None:
        source.set("alias", alias.copy())
    select = exp.select(exp.Star()).from_(source)
    where = tree.args.get("where")
    if where is not None:
        select.set("where", where.copy())
    order = tree.args.get("order")
    if order is not None:
        select.set("order", order.copy())
    limit = tree.args.get("limit")
    rows = cap + 1  # one more than the cap says whether the change is larger than it
    if limit is not None:
        stated = limit.expression
        if not isinstance(stated, exp.Literal) or stated.is_string:
            return ""
        rows = min(rows, int(stated.this))
    select.set("limit", exp.Limit(expression=exp.Literal.number(rows)))
    return select.lock(update=True).sql(dialect=DIALECT)


def _update(tree: exp.Update, cap: int) -> RowChange:
    table = _single_table(tree.this)
    if table is None or tree.args.get("from_") is not None or tree.args.get("from"):
        return no_undo("UPDATE", "a multi-table UPDATE has no exact undo")
    columns = []
    for assignment in tree.expressions:
        target = assignment.this if isinstance(assignment, exp.EQ) else None
        if not isinstance(target, exp.Column):
            return no_undo("UPDATE", "its SET clause could not be read for an undo")
        columns.append(target.name.lower())
    read = _locking_read(tree, table, cap)
    if not read:
        return no_undo("UPDATE", "its LIMIT is not a plain number")
    return RowChange("UPDATE", table, locking_read=read, set_columns=tuple(columns))


def _delete(tree: exp.Delete, cap: int) -> RowChange:
    table = _single_table(tree.this)
    if table is None or tree.args.get("tables") or tree.args.get("using"):
        return no_undo("DELETE", "a multi-table DELETE has no exact undo")
    read = _locking_read(tree, table, cap)
    if not read:
        return no_undo("DELETE", "its LIMIT is not a plain number")
    return RowChange("DELETE", table, locking_read=read)


def _insert(tree: exp.Insert) -> RowChange:
    if tree.args.get("ignore") or tree.args.get("conflict") or tree.args.get("replace"):
        return no_undo("INSERT", "INSERT IGNORE / ON DUPLICATE KEY may change existing rows")
    target = tree.this
    columns: tuple[str, ...] = ()
    if isinstance(target, exp.Schema):
        columns = tuple(identifier.name.lower() for identifier in target.expressions)
        target = target.this
    table = _single_table(target)
    if table is None:
        return no_undo("INSERT", "the inserted table could not be read for an undo")
    values = tree.expression
    rows: tuple[tuple[exp.Expression, ...], ...] = ()
    if isinstance(values, exp.Values):
        rows = tuple(tuple(row.expressions) for row in values.expressions)
    return RowChange("INSERT", table, insert_columns=columns, insert_rows=rows)


def insert_keys(
    change: RowChange, table_columns: Sequence[str], key: Sequence[str]
) -> list[tuple[exp.Expression, ...]] | None:
    """The key of every row an INSERT … VALUES names, as literals; None when a key value is
    not a plain literal (an expression, DEFAULT, an omitted column)."""
    names = change.insert_columns or tuple(name.lower() for name in table_columns)
    try:
        positions = [names.index(column.lower()) for column in key]
    except ValueError:
        return None
    keys = []
    for row in change.insert_rows:
        if len(row) != len(names):
            return None
        values = tuple(row[position] for position in positions)
        if not all(isinstance(value, exp.Literal) for value in values):
            return None
        keys.append(tuple(value.copy() for value in values))
    return keys


def literal(value: Any) -> exp.Expression:
    """A literal the server reads back as `value`."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, int | Decimal):
        return exp.Literal.number(str(value))
    if isinstance(value, float):
        return exp.Literal.number(repr(value))
    if isinstance(value, bytes | bytearray):
        return exp.HexString(this=bytes(value).hex()) if value else exp.Literal.string("")
    if isinstance(value, datetime.timedelta):
        return exp.Literal.string(_time_of(value))
    if isinstance(value, datetime.datetime):
        return exp.Literal.string(value.isoformat(sep=" "))
    if isinstance(value, datetime.date | datetime.time):
        return exp.Literal.string(value.isoformat())
    text = str(value)
    if "\\" in text:
        return exp.Introducer(this="_utf8mb4", expression=exp.HexString(this=text.encode().hex()))
    return exp.Literal.string(text)


def _time_of(value: datetime.timedelta) -> str:
    sign = "-" if value < datetime.timedelta(0) else ""
    micros = abs(value) // datetime.timedelta(microseconds=1)
    seconds, micro = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    return f"{sign}{hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{micro:06d}"


def _column(name: str) -> exp.Column:
    return exp.column(exp.to_identifier(name, quoted=True))


def _matches(columns: Sequence[str], values: Sequence[Any]) -> exp.Condition:
    """`c1 <=> v1 AND c2 <=> v2 …`: NULL-safe, so a NULL compares equal to NULL."""
    terms = [
        exp.NullSafeEQ(this=_column(name), expression=literal(value))
        for name, value in zip(columns, values, strict=True)
    ]
    return exp.and_(*terms) if len(terms) > 1 else terms[0]


def literal_sql(value: Any) -> str:
    """`literal(value)` as text, written directly: the same text sqlglot writes for it
    (tests/sql/test_undo_literals.py holds the two together), at a fraction of the cost,
    which matters for the thousands of keys of a large change."""
    common = _BY_TYPE.get(type(value))
    if common is not None:
        return common(value)
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes | bytearray):
        return f"x'{bytes(value).hex()}'" if value else "''"
    if isinstance(value, datetime.timedelta):
        return _quoted(_time_of(value))
    if isinstance(value, datetime.datetime):
        return _quoted(value.isoformat(sep=" "))
    if isinstance(value, datetime.date | datetime.time):
        return _quoted(value.isoformat())
    return _string(str(value))


def _string(text: str) -> str:
    if "\\" in text:
        return f"_utf8mb4 x'{text.encode().hex()}'"
    return _quoted(text)


def _quoted(text: str) -> str:
    if _ESCAPED.isdisjoint(text):
        return "'" + text.replace("'", "''") + "'"
    return f"'{_GENERATOR.escape_str(text)}'"


# The types most keys have, exactly (not subclasses: bool is an int), written without the
# isinstance chain.
_BY_TYPE: dict[type, Callable[[Any], str]] = {int: str, str: _string, Decimal: str, float: repr}


def _identifier_sql(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=DIALECT)


def rows_by_key(
    table: TableName,
    key: Sequence[str],
    keys: Sequence[Sequence[Any]],
    *,
    lock: bool,
    literal_keys: bool = False,
    columns: Sequence[str] = (),
) -> str:
    """`SELECT * FROM t WHERE (key) IN (…)` — the rows a change wrote, or their current state;
    with `columns`, those by name (SELECT * leaves out INVISIBLE columns).

    `keys` are driver values, or with `literal_keys` sqlglot literals. The text is joined
    directly from each value's literal (`literal_sql`): building and rendering a sqlglot tree
    of thousands of keys costs about a hundred times as much, growing faster than the keys."""
    key_list = key_list_sql(key, keys, literal_keys)
    return rows_in_key_list(table, key, key_list, lock=lock, columns=columns)


def key_list_sql(
    key: Sequence[str], keys: Sequence[Sequence[Any]], literal_keys: bool = False
) -> str:
    """The items of `rows_by_key`'s IN list for `keys`; lists of consecutive slices of the
    keys, joined with ", ", make the list of all of them."""
    render: Callable[[Any], str] = _node_sql if literal_keys else literal_sql
    if len(key) == 1:
        return ", ".join([render(values[0]) for values in keys])
    return ", ".join(["(" + ", ".join([render(v) for v in values]) + ")" for values in keys])


def rows_in_key_list(
    table: TableName,
    key: Sequence[str],
    key_list: str,
    *,
    lock: bool,
    columns: Sequence[str] = (),
) -> str:
    """`rows_by_key` around an IN list already written by `key_list_sql`."""
    if len(key) == 1:
        column = _identifier_sql(key[0])
    else:
        column = "(" + ", ".join([_identifier_sql(name) for name in key]) + ")"
    shown = ", ".join([_identifier_sql(name) for name in columns]) or "*"
    source = table.node().sql(dialect=DIALECT)
    text = f"SELECT {shown} FROM {source} WHERE {column} IN ({key_list})"
    return f"{text} FOR UPDATE" if lock else text


def _node_sql(node: exp.Expression) -> str:
    return node.sql(dialect=DIALECT)


def naming_columns(read: str, columns: Sequence[str]) -> str:
    """A `SELECT * …` read (the locking read of bot.sql.undo) with every column named
    instead of `*`, so INVISIBLE columns are read too; unchanged without `columns`."""
    if not read or not columns:
        return read
    tree = sqlglot.parse_one(read, read=DIALECT)
    if not isinstance(tree, exp.Select):
        return read
    tree.set("expressions", [_column(name) for name in columns])
    return tree.sql(dialect=DIALECT)


def update_back(
    table: TableName,
    key: Sequence[str],
    key_values: Sequence[Any],
    assignments: Sequence[tuple[str, Any]],
    expected: Sequence[tuple[str, Any]],
) -> str:
    """Set columns back by key, only where the row still holds `expected` (else 0 rows)."""
    sets = [exp.EQ(this=_column(name), expression=literal(value)) for name, value in assignments]
    where: exp.Condition = _matches(key, key_values)
    if expected:
        where = exp.and_(where, _matches([n for n, _ in expected], [v for _, v in expected]))
    return exp.Update(this=table.node(), expressions=sets, where=exp.Where(this=where)).sql(
        dialect=DIALECT
    )


def insert_back(table: TableName, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Put deleted rows back, every column as it was."""
    schema = exp.Schema(
        this=table.node(), expressions=[exp.to_identifier(name, quoted=True) for name in columns]
    )
    values = exp.Values(
        expressions=[exp.Tuple(expressions=[literal(value) for value in row]) for row in rows]
    )
    return exp.Insert(this=schema, expression=values).sql(dialect=DIALECT)


def delete_inserted(
    table: TableName,
    key: Sequence[str],
    key_values: Sequence[Any],
    columns: Sequence[str],
    inserted: Sequence[Any],
) -> str:
    """Delete one inserted row by key, only while `columns` still hold what was inserted."""
    where = _matches([*key, *columns], [*key_values, *inserted])
    return exp.Delete(this=table.node(), where=exp.Where(this=where)).sql(dialect=DIALECT)
