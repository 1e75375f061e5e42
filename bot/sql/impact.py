"""The read-only SQL that measures a change before anyone approves it, built from the
statement's own parse tree (never by pasting text): how many rows its WHERE/JOIN selects,
the first rows it touches, and the plan the server would use to find them.

- UPDATE and DELETE, single-table: ``SELECT COUNT(*) FROM <its table> WHERE <its WHERE>``
  (with its ORDER BY … LIMIT, counted through a derived table). Multi-table: one
  ``COUNT(DISTINCT alias.key…)`` per table written, summed — exact when every written table
  has a primary or unique NOT NULL key, else COUNT(*) of the join rows, which is only an
  upper bound.
- INSERT … VALUES: the number of rows, no query; INSERT … SELECT: the count of the SELECT.
  IGNORE, REPLACE and ON DUPLICATE KEY UPDATE say "up to".
- Preview: the first rows an UPDATE/DELETE touches, with the key and the columns it changes;
  for an UPDATE, the new value beside the old one ("col → new"), computed by the server in
  the preview query (a constant, or an expression of the row's values such as
  ``price_cents + 100``; none when it reads a column the same SET assigned before it, or
  calls what is not known to only read); for
  INSERT … SELECT, the first rows it would insert.
- EXPLAIN of the SELECT that finds the rows: access type, index, estimated rows.

Every query built here is classified before it is returned and dropped unless read-only, so
a WHERE that calls an unknown function is never evaluated ahead of approval.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from bot.sql.lexical import rewritten_differently
from bot.sql.risk import Risk, TableRef, classify

PREVIEW_ROWS = 5
_LEADING_REPLACE = re.compile(r"\s*REPLACE\b", re.IGNORECASE)
_CONSTANTS = (exp.Literal, exp.Null, exp.Boolean)


@dataclass(frozen=True, slots=True)
class Plan:
    """How to measure one statement. Queries are None when they cannot be built."""

    kind: str
    count_sql: str | None = None
    rows: int | None = None  # known without asking the server (INSERT … VALUES)
    up_to: bool = False  # the count is a ceiling, not the number that will change
    upsert: bool = False  # INSERT … ON DUPLICATE KEY UPDATE: it may update rows too
    explain_sql: str | None = None
    explain_tables: tuple[str, ...] = ()  # the written tables as EXPLAIN's "table" names them
    preview_sql: str | None = None
    written: tuple[TableRef, ...] = ()
    keyless: tuple[TableRef, ...] = ()  # written tables without a usable key
    problem: str = ""  # why the rows cannot be counted


Keys = Mapping[TableRef, tuple[str, ...]]  # written table -> its primary/unique NOT NULL key


def plan(
    text: str,
    kind: str,
    keys: Keys,
    *,
    preview_rows: int = PREVIEW_ROWS,
    rewritten: str | None = None,
) -> Plan:
    """The measuring queries for one INSERT, REPLACE, UPDATE or DELETE statement.
    ``rewritten`` is what the classifier found (Statement.rewritten); None reads it from
    ``text``."""
    if rewritten is None:
        rewritten = rewritten_differently(text)
    if rewritten:
        return Plan(kind, problem=f"its rows are not counted ahead: {rewritten}")
    try:
        if kind == "REPLACE":
            return _replace(text, keys)
        tree = sqlglot.parse_one(text, read="mysql")
        if isinstance(tree, exp.Update):
            return _update(tree, keys, preview_rows)
        if isinstance(tree, exp.Delete):
            return _delete(tree, keys, preview_rows)
        if isinstance(tree, exp.Insert):
            return _insert(tree, kind, preview_rows)
    except (SqlglotError, ValueError, TypeError, AttributeError, RecursionError) as error:
        return Plan(kind, problem=f"the statement could not be read to count it ({error})")
    return Plan(kind, problem=f"rows of a {kind} statement are not counted ahead")


def table_ref(table: exp.Table) -> TableRef:
    return TableRef(table.db or None, table.name)


# --- building blocks ----------------------------------------------------------------------


def _read_only(select: exp.Expr | None) -> str | None:
    """The SQL of a query we built, only if the classifier agrees it only reads."""
    if select is None:
        return None
    sql = select.sql(dialect="mysql")
    return sql if classify(sql).risk is Risk.READ_ONLY else None


def _explain(select: exp.Expr) -> str | None:
    sql = _read_only(select)
    return None if sql is None else exp.Describe(this=select.copy()).sql(dialect="mysql")


def _tables(node: exp.Expression | None) -> list[exp.Table]:
    """Base tables of a table reference list (a table and its joins, nested or not)."""
    found: list[exp.Table] = []
    if isinstance(node, exp.Table):
        found.append(node)
    elif isinstance(node, exp.Subquery) and (
        isinstance(node.this, exp.Subquery) or not isinstance(node.this, exp.Query)
    ):  # "(t JOIN u ON …)" or "((u))"; "(SELECT …)" is a derived table, never written
        found.extend(_tables(node.this))
    else:
        return found
    for join in node.args.get("joins") or []:
        found.extend(_tables(join.this))
    return found


def _source(node: exp.Expression) -> exp.Select:
    """SELECT … FROM the statement's table references, joins included."""
    return exp.Select().from_(node.copy(), copy=False)


def _source_list(nodes: list[exp.Expression]) -> exp.Select:
    select = _source(nodes[0])
    for node in nodes[1:]:
        select = select.join(node.copy(), join_type="CROSS", copy=False)
    return select


def _with_where(select: exp.Select, tree: exp.Expression) -> exp.Select:
    where = tree.args.get("where")
    if isinstance(where, exp.Where):
        select.set("where", where.copy())
    return select


def _ordered_limit(select: exp.Select, tree: exp.Expression, most: int | None) -> exp.Select:
    order = tree.args.get("order")
    if isinstance(order, exp.Order):
        select.set("order", order.copy())
    limit = tree.args.get("limit")
    if most is not None:
        bound = _limit_value(limit)
        select = select.limit(most if bound is None else min(bound, most), copy=False)
    elif limit is not None:
        select.set("limit", limit.copy())
    return select


def _limit_value(limit: exp.Expression | None) -> int | None:
    if not isinstance(limit, exp.Limit):
        return None
    value = limit.expression
    if isinstance(value, exp.Literal) and not value.is_string and value.this.isdigit():
        return int(value.this)
    return None


def _label(table: exp.Table) -> str:
    return table.alias or table.name


def _column(table: exp.Table, name: str) -> exp.Column:
    qualifier = exp.to_identifier(_label(table))
    return exp.Column(this=exp.to_identifier(name, quoted=True), table=qualifier)


def _counted(select: exp.Select, count_exprs: list[exp.Expression]) -> exp.Select:
    select.set("expressions", count_exprs)
    return select


def _first_rows(inner: exp.Query, rows: int) -> exp.Select:
    """SELECT * FROM (inner) AS previewed LIMIT rows: its own LIMIT still applies."""
    derived = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("previewed")))
    return exp.Select(expressions=[exp.Star()]).from_(derived, copy=False).limit(rows, copy=False)


def _count_of(inner: exp.Query) -> exp.Select:
    """SELECT COUNT(*) FROM (inner) AS counted."""
    derived = exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier("counted")))
    return exp.Select(expressions=[exp.Count(this=exp.Star())]).from_(derived, copy=False)


def _count(
    tree: exp.Expression,
    source: exp.Select,
    written: list[exp.Table],
    multi: bool,
    keys: Keys,
) -> tuple[exp.Select, bool, list[TableRef]]:
    """The COUNT query, whether it is only a ceiling, and the written tables without a key."""
    keyless = [table_ref(t) for t in written if not keys.get(table_ref(t))]
    if not multi:
        if tree.args.get("limit") is not None:
            inner = _ordered_limit(_with_where(source.copy(), tree), tree, None)
            inner.set("expressions", [exp.Literal.number(1)])
            return _count_of(inner), False, keyless
        counted = _counted(_with_where(source.copy(), tree), [exp.Count(this=exp.Star())])
        return counted, False, keyless
    counts: list[exp.Expression] = []
    ceiling = False
    for table in written:
        key = keys.get(table_ref(table))
        if key:
            columns = [_column(table, name) for name in key]
            counts.append(exp.Count(this=exp.Distinct(expressions=columns)))
        else:
            counts.append(exp.Count(this=exp.Star()))
            ceiling = True
    total: exp.Expression = counts[0]
    for count in counts[1:]:
        total = exp.Add(this=total, expression=count)
    return _counted(_with_where(source.copy(), tree), [total]), ceiling, keyless


def _resolve(name: exp.Table, references: list[exp.Table]) -> list[exp.Table]:
    """Tables a DELETE list entry or SET qualifier names: alias first, then table name."""
    wanted = name.name.lower()
    by_alias = [t for t in references if t.alias and t.alias.lower() == wanted]
    if by_alias:
        return by_alias
    return [
        t
        for t in references
        if not t.alias
        and t.name.lower() == wanted
        and (not name.db or (t.db or "").lower() == name.db.lower())
    ]


def _measure(
    kind: str,
    tree: exp.Expression,
    source: exp.Select,
    references: list[exp.Table],
    written: list[exp.Table],
    keys: Keys,
    preview: list[exp.Expr],
    preview_rows: int,
) -> Plan:
    multi = len(references) > 1
    count, ceiling, keyless = _count(tree, source, written, multi, keys)
    rows_query = _with_where(source.copy(), tree)
    rows_query.set("expressions", [exp.Literal.number(1)])
    shown = _ordered_limit(_with_where(source.copy(), tree), tree, preview_rows)
    shown.set("expressions", preview)
    count_sql = _read_only(count)
    return Plan(
        kind,
        count_sql=count_sql,
        up_to=ceiling,
        explain_sql=_explain(rows_query),
        explain_tables=tuple(_label(t) for t in written),
        preview_sql=_read_only(shown),
        written=tuple(dict.fromkeys(table_ref(t) for t in written)),
        keyless=tuple(dict.fromkeys(keyless)),
        problem="" if count_sql else "its WHERE is not known to be read-only, so it is not run",
    )


def _key_columns(table: exp.Table, keys: Keys) -> list[exp.Expr]:
    return [_column(table, name) for name in keys.get(table_ref(table), ())]


# --- the statements -----------------------------------------------------------------------


def _update(tree: exp.Update, keys: Keys, preview_rows: int) -> Plan:
    references = _tables(tree.this)
    if not references or not tree.expressions:
        return Plan("UPDATE", problem="its tables or its SET clause could not be read")
    written: list[exp.Table] = []
    preview: list[exp.Expr] = []
    assigned: set[str] = set()
    for assignment in tree.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            return Plan("UPDATE", problem="its SET clause could not be read")
        column = assignment.this
        owners = _resolve(exp.table_(column.table), references) if column.table else references
        if len(references) > 1 and len(owners) != 1:
            owners = references  # an unqualified or unresolved column: any of them (a ceiling)
        for owner in owners:
            if owner not in written:
                written.append(owner)
        name = column.name
        preview.append(exp.alias_(column.copy(), name, quoted=True))
        value = assignment.expression
        if _constant(value) or _computed_alike(value, assigned):
            # The server computes the new value in the preview query, from the row's own
            # values, as the UPDATE will.
            preview.append(exp.alias_(value.copy(), f"{name} → new", quoted=True))
        assigned.add(name.lower())
    keys_first = [c for table in written for c in _key_columns(table, keys)]
    source = _source(tree.this)
    return _measure(
        "UPDATE", tree, source, references, written, keys, keys_first + preview, preview_rows
    )


def _computed_alike(value: exp.Expression, assigned: set[str]) -> bool:
    """Whether a SELECT computes `value` as the UPDATE will: it reads no column an earlier
    assignment of the same SET changes (MariaDB assigns left to right), and it only reads."""
    if any(column.name.lower() in assigned for column in value.find_all(exp.Column)):
        return False
    if value.find(exp.Subquery, exp.Select) is not None:
        return False
    return _read_only(exp.Select(expressions=[value.copy()])) is not None


def _constant(value: exp.Expression) -> bool:
    if isinstance(value, exp.Neg):
        value = value.this
    return isinstance(value, _CONSTANTS)


def _delete(tree: exp.Delete, keys: Keys, preview_rows: int) -> Plan:
    using = tree.args.get("using") or []
    listed: list[exp.Table]
    if using:  # DELETE FROM a USING a JOIN b …
        listed = _tables(tree.this)
        nodes: list[exp.Expression] = list(using)
        references = [t for item in using for t in _tables(item)]
    else:  # DELETE FROM t …, or DELETE a, b FROM a JOIN b …
        listed = [t for t in tree.args.get("tables") or [] if isinstance(t, exp.Table)]
        nodes = [tree.this]
        references = _tables(tree.this)
    if not references:
        return Plan("DELETE", problem="its tables could not be found")
    written: list[exp.Table] = []
    for item in listed or references[:1]:
        found = _resolve(item, references) if listed else [item]
        if not found:
            return Plan("DELETE", problem=f"it deletes from {item.name}, which it does not join")
        written.extend(t for t in found if t not in written)
    preview: list[exp.Expr] = []
    for table in written:
        preview.append(exp.Column(this=exp.Star(), table=exp.to_identifier(_label(table))))
    return _measure(
        "DELETE", tree, _source_list(nodes), references, written, keys, preview, preview_rows
    )


def _insert(tree: exp.Insert, kind: str, preview_rows: int = PREVIEW_ROWS) -> Plan:
    upsert = bool(tree.args.get("conflict"))
    up_to = kind == "REPLACE" or bool(tree.args.get("ignore")) or upsert
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    written = (table_ref(target),) if isinstance(target, exp.Table) else ()
    source = tree.expression
    if isinstance(source, exp.Values):
        return Plan(kind, rows=len(source.expressions), up_to=up_to, upsert=upsert, written=written)
    if isinstance(source, exp.Query):
        count_sql = _read_only(_count_of(source.copy()))
        return Plan(
            kind,
            count_sql=count_sql,
            up_to=up_to,
            upsert=upsert,
            explain_sql=_explain(source),
            preview_sql=_read_only(_first_rows(source.copy(), preview_rows)),
            written=written,
            problem=""
            if count_sql
            else "its SELECT is not known to be read-only, so it is not run",
        )
    return Plan(
        kind, up_to=up_to, upsert=True, written=written, problem="its rows could not be read"
    )


def _replace(text: str, keys: Keys) -> Plan:
    """REPLACE has INSERT's grammar, which the parser knows: read it as one."""
    match = _LEADING_REPLACE.match(text)
    if match is None:
        return Plan("REPLACE", problem="the statement could not be read to count it")
    tree = sqlglot.parse_one("INSERT" + text[match.end() :], read="mysql")
    if not isinstance(tree, exp.Insert):
        return Plan("REPLACE", problem="the statement could not be read to count it")
    return _insert(tree, "REPLACE")
