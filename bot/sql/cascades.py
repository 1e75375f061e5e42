"""The read-only SQL that counts what a foreign key's cascade will write, built from the
statement's own parse tree (never by pasting text).

InnoDB carries out ON DELETE / ON UPDATE actions inside the storage engine: the server's
session counters (`Handler_delete`, `Handler_update`) do not see the child rows a cascade
deletes or updates. They are counted instead by the rows that reference the ones the
statement touches, level by level down the chain of keys:

    SELECT COUNT(*) FROM child WHERE (child.fk…) IN (
        SELECT parent.ref… FROM (SELECT … FROM <its table> WHERE <its WHERE> …) AS cascade_0)

Only a single-table UPDATE or DELETE is counted this way; anything else says it cannot be.
The same query runs before the card is posted and, locking the rows it counts, inside the
approved transaction just before the statement.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from bot.sql.impact import _ordered_limit, _source, _tables, _with_where
from bot.sql.lexical import rewritten_differently
from bot.sql.risk import Risk, TableRef, classify

DIALECT = "mysql"


@dataclass(frozen=True, slots=True)
class Link:
    """One foreign key on the way down: `child (columns)` references `parent (referenced)`."""

    child: TableRef
    columns: tuple[str, ...]
    referenced: tuple[str, ...]


def assigned_columns(text: str) -> frozenset[str] | None:
    """The columns an UPDATE assigns (lower case); None when they cannot be read."""
    try:
        tree = sqlglot.parse_one(text, read=DIALECT)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Update):
        return None
    names = set()
    for assignment in tree.expressions:
        if not isinstance(assignment, exp.EQ) or not isinstance(assignment.this, exp.Column):
            return None
        names.add(assignment.this.name.lower())
    return frozenset(names)


def _single_table(tree: exp.Expr) -> exp.Table | None:
    if isinstance(tree, exp.Update):
        if tree.args.get("from_") is not None or tree.args.get("from") is not None:
            return None
        tables = _tables(tree.this)
    elif isinstance(tree, exp.Delete):
        if tree.args.get("tables") or tree.args.get("using"):
            return None
        tables = _tables(tree.this)
    else:
        return None
    return tables[0] if len(tables) == 1 else None


def _names(names: Sequence[str], table: exp.Expression | None = None) -> list[exp.Expression]:
    qualifier = None if table is None else exp.to_identifier(str(table), quoted=True)
    return [exp.Column(this=exp.to_identifier(n, quoted=True), table=qualifier) for n in names]


def _node(table: TableRef) -> exp.Table:
    db = None if table.schema is None else exp.to_identifier(table.schema, quoted=True)
    return exp.Table(this=exp.to_identifier(table.name, quoted=True), db=db)


def _matching(table: TableRef, columns: Sequence[str], inner: exp.Query) -> exp.Expression:
    named = _names(columns, exp.to_identifier(table.name))
    left: exp.Expression = named[0] if len(named) == 1 else exp.Tuple(expressions=named)
    return exp.In(this=left, query=exp.Subquery(this=inner))


def count_sql(text: str, chain: Sequence[Link], *, lock: bool = False) -> str | None:
    """`SELECT COUNT(*)` of the rows the last key of `chain` writes when `text` (one
    single-table UPDATE or DELETE) runs; None when it cannot be built read-only."""
    if not chain or rewritten_differently(text):
        return None
    try:
        tree: Any = sqlglot.parse_one(text, read=DIALECT)
        table = _single_table(tree)
        if table is None:
            return None
        label = table.alias or table.name
        first = _ordered_limit(_with_where(_source(tree.this), tree), tree, None)
        first.set("expressions", _names(chain[0].referenced, exp.to_identifier(label)))
        # MariaDB refuses LIMIT inside IN (…): a derived table lifts that.
        derived = exp.Subquery(this=first, alias=exp.TableAlias(this=exp.to_identifier("c0")))
        inner: exp.Query = exp.Select(expressions=[exp.Star()]).from_(derived, copy=False)
        for link, below in itertools.pairwise(chain):
            inner = (
                exp.Select(expressions=_names(below.referenced, exp.to_identifier(link.child.name)))
                .from_(_node(link.child), copy=False)
                .where(_matching(link.child, link.columns, inner), copy=False)
            )
        last = chain[-1]
        counted = (
            exp.Select(expressions=[exp.Count(this=exp.Star())])
            .from_(_node(last.child), copy=False)
            .where(_matching(last.child, last.columns, inner), copy=False)
        )
        sql = counted.sql(dialect=DIALECT)
    except (SqlglotError, ValueError, TypeError, AttributeError, RecursionError):
        return None
    if classify(sql).risk is not Risk.READ_ONLY:
        return None  # its WHERE calls what is not known to only read: never run ahead
    return sql + " FOR UPDATE" if lock else sql
