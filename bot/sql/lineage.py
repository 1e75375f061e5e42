"""Where each output column of a query comes from: the masked base columns behind it.

A query is parsed, its identifiers folded to lower case (MySQL compares column names, and
with `lower_case_table_names` table names, without case), and qualified by sqlglot against
the schema the server described (`qualify`: `*` expanded in the server's column order,
every column tied to its source, `USING`/`NATURAL` joins written out). Then every scope
(`optimizer.scope`: the query, its CTEs, derived tables, subqueries and the branches of a
UNION) is walked here, not by `sqlglot.lineage`, which follows one named column at a time
and says nothing of the clauses that filter, group or order rows.

For each scope the taint of every output column is the set of masked base columns any part
of its expression reads: a column of a base table (masked or not), of a view (its
definition traced the same way), of a CTE or derived table (that scope's output), or of a
subquery in the select list (all of its outputs). Any expression over a masked column is
masked in full: functions, CASE, CAST, aggregates and window functions alike. A masked
value assigned to a user variable (`@v := email`) is refused: a later statement could read it.

A masked value anywhere else would let its content be inferred from the rows returned, so a
taint found in WHERE, JOIN … ON/USING, GROUP BY, HAVING, ORDER BY (the LIMIT-probing form
`ORDER BY email LIMIT 1`), a window's PARTITION BY or ORDER BY, DISTINCT or a de-duplicating
set operation over masked output, or SELECT … INTO, is an `Untraceable` refusal. So is
anything the walk cannot tie to a source: an unknown table, a `*` over one, a column of a
table function (JSON_TABLE), a node sqlglot could not resolve. Fail closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

Taint = frozenset[str]  # "table.column" of every masked base column an output reads
CLEAR: Taint = frozenset()
SYSTEM_SCHEMAS = frozenset({"information_schema", "performance_schema", "mysql", "sys"})

# (schema, table) -> the taint of each of its columns by name, or None when unknown.
ColumnsOf = Callable[[str, str], Mapping[str, Taint] | None]


class Untraceable(Exception):
    """The statement is refused: lineage unknown, or a masked value used to pick rows."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Clauses of a SELECT that decide which rows come back, or in which order.
_INFERENCE_CLAUSES = {
    "where": "WHERE",
    "group": "GROUP BY",
    "having": "HAVING",
    "order": "ORDER BY",
    "qualify": "QUALIFY",
    "limit": "LIMIT",
    "offset": "OFFSET",
    "connect": "CONNECT BY",
    "windows": "WINDOW",
}
# Arguments of a SELECT that are neither sources nor row-picking clauses.
_HANDLED = {
    "expressions",
    "from",
    "from_",
    "joins",
    "with",
    "with_",
    "into",
    "distinct",
    "kind",
    "hint",
}
_HANDLED |= {"locks", "operation_modifiers"}
_HANDLED |= set(_INFERENCE_CLAUSES)


def lowered(tree: exp.Expression) -> exp.Expression:
    """`tree` with every identifier in lower case (names compare without case here)."""
    for identifier in tree.find_all(exp.Identifier):
        identifier.set("this", identifier.name.lower())
    return tree


def trace(
    tree: exp.Expression,
    *,
    schema: Mapping[str, Mapping[str, Mapping[str, str]]],
    default_schema: str,
    columns_of: ColumnsOf,
) -> tuple[tuple[str, ...], tuple[Taint, ...]]:
    """(output names, taint of each output) of the query `tree`; raises Untraceable."""
    try:
        qualified = qualify(
            lowered(tree),
            schema=dict(schema),
            db=default_schema,
            dialect="mysql",
            validate_qualify_columns=True,
            quote_identifiers=False,
            identify=False,
        )
        scopes = traverse_scope(qualified)
    except (SqlglotError, KeyError, ValueError, AttributeError, TypeError) as exc:
        raise Untraceable(f"the lineage of its columns cannot be traced ({_short(exc)})") from None
    if not scopes:
        raise Untraceable("the lineage of its columns cannot be traced")
    walker = _Walker(scopes, columns_of)
    for scope in scopes:  # every scope, also those no output reads (a filtering subquery)
        walker.outputs(scope)
    return walker.outputs(scopes[-1])


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


class _Walker:
    def __init__(self, scopes: list[Scope], columns_of: ColumnsOf) -> None:
        self._by_expression = {id(scope.expression): scope for scope in scopes}
        self._columns_of = columns_of
        self._done: dict[int, tuple[tuple[str, ...], tuple[Taint, ...]]] = {}

    def outputs(self, scope: Scope) -> tuple[tuple[str, ...], tuple[Taint, ...]]:
        key = id(scope)
        if key not in self._done:
            self._done[key] = self._outputs(scope)
        return self._done[key]

    def _outputs(self, scope: Scope) -> tuple[tuple[str, ...], tuple[Taint, ...]]:
        node = scope.expression
        if isinstance(node, exp.SetOperation):
            return self._set_operation(scope, node)
        if isinstance(node, exp.Select):
            return self._select(scope, node)
        raise Untraceable(f"a {node.key.upper()} in it cannot be traced")

    def _set_operation(
        self, scope: Scope, node: exp.SetOperation
    ) -> tuple[tuple[str, ...], tuple[Taint, ...]]:
        left, right = (self.outputs(branch) for branch in scope.set_operation_scopes)
        if len(left[1]) != len(right[1]):
            raise Untraceable("the branches of its set operation differ in width")
        taints = tuple(a | b for a, b in zip(left[1], right[1], strict=True))
        tainted = any(taints)
        if tainted and (node.args.get("distinct") or not isinstance(node, exp.Union)):
            raise Untraceable(
                f"{node.key.upper()} compares masked values across rows (use UNION ALL)"
            )
        self._inference(node, scope, dict(zip(left[0], taints, strict=True)))
        return left[0], taints

    def _inference(self, node: exp.Expression, scope: Scope, aliases: Mapping[str, Taint]) -> None:
        """Refused: a masked value in a clause that picks or orders the rows."""
        for clause, word in _INFERENCE_CLAUSES.items():
            part = node.args.get(clause)
            parts = part if isinstance(part, list) else [part]
            if any(p is not None and self._taint(p, scope, aliases) for p in parts):
                raise Untraceable(f"a masked column is used in {word}")

    def _select(self, scope: Scope, node: exp.Select) -> tuple[tuple[str, ...], tuple[Taint, ...]]:
        names: list[str] = []
        taints: list[Taint] = []
        for projection in node.expressions:
            if isinstance(projection, exp.Star) or (
                isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
            ):
                self._star(scope, projection)
                names.append("*")
                taints.append(CLEAR)
                continue
            names.append(projection.alias_or_name)
            taints.append(self._taint(projection, scope, None))
        aliases = dict(zip(names, taints, strict=True))
        self._inference(node, scope, aliases)
        for join in node.args.get("joins") or ():
            for key in ("on", "using", "match_condition"):
                part = join.args.get(key)
                if part is None:
                    continue
                parts = part if isinstance(part, list) else [part]
                if any(self._taint(p, scope, None, join_using=key == "using") for p in parts):
                    raise Untraceable("a masked column is used in a JOIN condition")
        tainted = any(taints)
        if tainted and node.args.get("distinct") is not None:
            raise Untraceable("DISTINCT compares masked values across rows")
        if tainted and node.args.get("into") is not None:
            raise Untraceable("SELECT … INTO would copy a masked value")
        unknown = sorted(key for key in set(node.args) - _HANDLED if node.args.get(key))
        if unknown:
            raise Untraceable(f"its {', '.join(unknown)} cannot be traced")
        return tuple(names), tuple(taints)

    def _star(self, scope: Scope, star: exp.Expression) -> None:
        """A `*` left after qualify: only over system schemas, whose rows hold no data."""
        for source in scope.sources.values():
            if not (isinstance(source, exp.Table) and source.db in SYSTEM_SCHEMAS):
                raise Untraceable("a * over a table whose columns are unknown")

    def _taint(
        self,
        node: exp.Expression,
        scope: Scope,
        aliases: Mapping[str, Taint] | None,
        *,
        join_using: bool = False,
    ) -> Taint:
        found: set[str] = set()
        stack = [node]
        while stack:
            current = stack.pop()
            if current is not scope.expression and isinstance(
                current, (exp.Select, exp.SetOperation)
            ):
                found.update(*self.outputs(self._scope(current))[1])
                continue
            if isinstance(current, exp.Column):
                found |= self._column(current, scope, aliases)
                continue
            if join_using and isinstance(current, exp.Identifier):
                found |= self._using(current, scope)
                continue
            if isinstance(current, exp.PropertyEQ):  # @v := value: kept for later statements
                if self._taint(current.expression, scope, aliases):
                    raise Untraceable("@variable := would keep a masked value unmasked")
                continue
            if isinstance(current, exp.Window):
                for part in (current.args.get("partition_by") or [], [current.args.get("order")]):
                    if any(p is not None and self._taint(p, scope, aliases) for p in part):
                        raise Untraceable(
                            "a masked column is used in a window's PARTITION/ORDER BY"
                        )
                stack.append(current.this)
                continue
            stack.extend(current.iter_expressions())
        return frozenset(found)

    def _scope(self, node: exp.Expression) -> Scope:
        scope = self._by_expression.get(id(node))
        if scope is None:
            raise Untraceable("a subquery in it cannot be traced")
        return scope

    def _using(self, identifier: exp.Identifier, scope: Scope) -> Taint:
        found: set[str] = set()
        for alias in scope.sources:
            found |= self._source_column(scope, alias, identifier.name, required=False)
        return frozenset(found)

    def _column(
        self, column: exp.Column, scope: Scope, aliases: Mapping[str, Taint] | None
    ) -> Taint:
        if not column.table:
            if aliases is not None and column.name in aliases:
                return aliases[column.name]
            raise Untraceable(f"column {column.name} cannot be tied to a source")
        return self._source_column(scope, column.table, column.name, required=True)

    def _source_column(self, scope: Scope, alias: str, name: str, *, required: bool) -> Taint:
        at: Scope | None = scope
        while at is not None and alias not in at.sources:
            at = at.parent  # a correlated reference to an outer query
        if at is None:
            raise Untraceable(f"{alias}.{name} cannot be tied to a source")
        source = at.sources[alias]
        if isinstance(source, Scope):
            names, taints = self.outputs(source)
            known = dict(zip(names, taints, strict=True))
        elif isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
            if source.db in SYSTEM_SCHEMAS or (not source.db and source.name == "dual"):
                return CLEAR
            columns = self._columns_of(source.db, source.name)
            if columns is None:
                raise Untraceable(f"table {source.db}.{source.name} is not known")
            known = dict(columns)
        else:
            raise Untraceable(f"the columns of {alias} cannot be traced")
        if name in known:
            return known[name]
        if required:
            raise Untraceable(f"{alias}.{name} cannot be tied to a source")
        return CLEAR
