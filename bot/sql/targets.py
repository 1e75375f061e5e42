"""Which tables a parsed INSERT, UPDATE or DELETE writes.

Read from the parser's tree, where aliases can be resolved. When the writer of a
multi-table statement cannot be pinned down (an unqualified SET column, an alias that
matches nothing), every table in the statement's table list is reported: a superset, so a
guard comparing schemas errs towards refusing. Parenthesised table references
(``UPDATE (t JOIN other.u ON …)``, ``JOIN (other.u)``) belong to the table list; derived
tables (``JOIN (SELECT …) d``) do not, since the server refuses to write through them
("The target table d of the UPDATE is not updatable").

When the parser cannot read such a statement, its targets come from tokens
(lexical_dml_targets): every table named anywhere in its table references, parenthesised
ones included — again a superset.
"""

from __future__ import annotations

from collections import deque

from sqlglot import exp

from bot.sql.risk import TableRef
from bot.sql.tokens import PUNCT, WORD, Token, qualified_name, skip_words
from bot.sql.verdict import SERVER


def dml_targets(tree: exp.Expression) -> list[TableRef]:
    ctes = _cte_names(tree)
    if isinstance(tree, exp.Insert):
        found = _insert_targets(tree)
    elif isinstance(tree, exp.Update):
        found = _update_targets(tree)
    elif isinstance(tree, exp.Delete):
        found = _delete_targets(tree)
    else:
        found = []
    unique: list[TableRef] = []
    for ref in found:
        if ref.schema is None and ref.name in ctes:
            continue  # a CTE is not a table; the server refuses to write it anyway
        if ref not in unique:
            unique.append(ref)
    return unique


def read_tables(tree: exp.Expression) -> list[TableRef]:
    """Every base table a query reads (a locking read locks rows in them)."""
    ctes = _cte_names(tree)
    refs: list[TableRef] = []
    for table in tree.find_all(exp.Table):
        ref = _ref(table)
        if ref.name and not (ref.schema is None and ref.name in ctes) and ref not in refs:
            refs.append(ref)
    return refs


def query_reads(tree: exp.Expression, upper: str = "") -> list[TableRef]:
    """Every table or view a parsed statement names in a FROM, join or subquery, as written
    (CTE names and DUAL aside). A three-part name is not MySQL's and could be anything: it
    reads the whole server.

    ``upper`` (the statement's upper-cased masked text) allows a shortcut: when it holds
    one SELECT at most and no TABLE or WITH, nothing can nest a query, so the tables are
    those of the statement's own table references and the tree is not walked."""
    tables = _shallow_tables(tree, upper) if upper else None
    ctes = _cte_names(tree) if tables is None else ()
    refs: dict[TableRef, None] = {}
    for table in _all_tables(tree) if tables is None else tables:
        name = table.name
        if not name:
            continue  # JSON_TABLE(…): its arguments are expressions, scanned as calls
        if table.catalog:
            refs[SERVER] = None
            continue
        schema = table.db or None
        if schema is None and (name in ctes or name.upper() == "DUAL"):
            continue
        refs[TableRef(schema, name)] = None
    return list(refs)


# Nodes that never hold a table or a query below them: not worth visiting.
_LEAVES = frozenset({exp.Identifier, exp.Literal, exp.Column, exp.Star, exp.DataType})


def _all_tables(tree: exp.Expression) -> list[exp.Table]:
    """Every Table node in the tree, like tree.find_all(exp.Table) but without visiting
    leaves (names, literals, columns, types), which makes it two to three times faster."""
    found: list[exp.Table] = []
    queue = deque([tree])  # breadth first, as find_all: tables come in the order written
    while queue:
        node = queue.popleft()
        for value in node.args.values():
            for item in value if type(value) is list else (value,):
                kind = type(item)
                if kind is exp.Table:
                    found.append(item)
                    queue.append(item)
                elif kind not in _LEAVES and isinstance(item, exp.Expression):
                    queue.append(item)
    return found


def _shallow_tables(tree: exp.Expression, upper: str) -> list[exp.Table] | None:
    """The tables of a statement that cannot nest a query, from its table references only;
    None when it might, or when a reference is anything but plain or joined tables: then
    the whole tree is walked."""
    if "TABLE" in upper or "WITH" in upper:
        return None
    args = tree.args
    if type(tree) is exp.Select:
        if upper.count("SELECT") > 1:
            return None
        keys: tuple[str, ...] = _SELECT_REFERENCES
    elif type(tree) is exp.Update or type(tree) is exp.Delete:
        if "SELECT" in upper:
            return None
        keys = _DML_REFERENCES
    else:
        return None
    tables: list[exp.Table] = []
    for key in keys:
        value = args.get(key)
        if value is None or value is True or value is False:
            continue
        for item in value if type(value) is list else (value,):
            if type(item) is exp.From or type(item) is exp.Join:
                item = item.this
            if not _references(item, tables):
                return None
    return tables


_SELECT_REFERENCES = ("from_", "from", "joins")
_DML_REFERENCES = ("this", "from_", "from", "using", "tables", "joins")


def _references(node: exp.Expression, tables: list[exp.Table]) -> bool:
    """Collect a table reference's tables (a table, its joins, parenthesised ones); False
    for any other shape."""
    if type(node) is exp.Table and node.name:
        tables.append(node)
    elif type(node) is exp.Subquery and not isinstance(node.this, exp.Query):
        if not _references(node.this, tables):
            return False
    else:
        return False
    joins = node.args.get("joins")
    if joins:
        for join in joins:
            if not _references(join.this, tables):
                return False
    return True


def qualified_names(tokens: list[Token]) -> list[TableRef]:
    """Every ``a.b`` (and ``a.b.c``, as ``a.b``) among the tokens: the schema-qualified names
    a statement mentions, for when the parser cannot say which of them are tables. Column
    references (``t.col``) come along too — a superset."""
    refs: list[TableRef] = []
    index = 0
    while index + 2 < len(tokens):
        first, dot, second = tokens[index], tokens[index + 1], tokens[index + 2]
        if first.is_identifier and dot.word == "." and second.is_identifier:
            ref = TableRef(first.name, second.name)
            if ref not in refs:
                refs.append(ref)
            index += 3
            while index + 1 < len(tokens) and tokens[index].word == ".":
                index += 2  # the column of db.table.column
            continue
        index += 1
    return refs


def _ref(table: exp.Table) -> TableRef:
    return TableRef(table.db or None, table.name)


def _cte_names(tree: exp.Expression) -> set[str]:
    """The statement's CTE names, exactly as written: a name differing only in case is
    reported as a table, since whether it is one depends on the server's
    lower_case_table_names (unqualified, it is in the own schema either way)."""
    with_ = tree.args.get("with_") or tree.args.get("with")
    if not isinstance(with_, exp.With):
        return set()
    return {cte.alias for cte in with_.expressions if isinstance(cte, exp.CTE)}


def _insert_targets(tree: exp.Insert) -> list[TableRef]:
    target = tree.this
    if isinstance(target, exp.Schema):
        target = target.this
    return [_ref(target)] if isinstance(target, exp.Table) else []


def _table_list(node: exp.Expression | None) -> list[exp.Table]:
    """Base tables of a table reference list: a table and its joins, and parenthesised table
    references with theirs; not derived tables (the server refuses to write those)."""
    tables: list[exp.Table] = []
    if isinstance(node, exp.Table):
        tables.append(node)
    elif isinstance(node, exp.Subquery):  # "(t JOIN u ON …)" or "(u)", unless it is a query
        inner = node.this
        if isinstance(inner, exp.Subquery) or not isinstance(inner, exp.Query):
            tables.extend(_table_list(inner))  # ((u)) nests; (SELECT …) is a derived table
    elif isinstance(node, exp.From):
        return _table_list(node.this)
    else:
        return tables
    for join in node.args.get("joins") or []:
        tables.extend(_table_list(join.this))
    return tables


def _resolve(qualifier: str, schema: str | None, tables: list[exp.Table]) -> list[exp.Table]:
    """Tables a column qualifier (alias or name) may refer to: every table whose alias or
    name matches it, ignoring case. Whether the server folds case depends on its
    lower_case_table_names, so both readings are covered — a superset; taking the alias
    first would miss ``UPDATE t AS X JOIN other.x SET x.a = 1``, which writes other.x
    when names are case-sensitive."""
    lowered = qualifier.casefold()
    wanted_schema = schema.casefold() if schema is not None else None
    return [
        table
        for table in tables
        if (schema is None and table.alias and table.alias.casefold() == lowered)
        or (
            table.name.casefold() == lowered
            and (wanted_schema is None or (table.db or "").casefold() == wanted_schema)
        )
    ]


def _update_targets(tree: exp.Update) -> list[TableRef]:
    tables = _table_list(tree.this)
    tables += _table_list(tree.args.get("from_") or tree.args.get("from"))
    if len(tables) <= 1:
        return [_ref(table) for table in tables]
    written: list[exp.Table] = []
    for assignment in tree.expressions:
        column = assignment.this if isinstance(assignment, exp.EQ) else None
        if not isinstance(column, exp.Column) or not column.table:
            return [_ref(table) for table in tables]
        matches = _resolve(column.table, column.db or None, tables)
        if not matches:
            return [_ref(table) for table in tables]
        written.extend(matches)
    return [_ref(table) for table in written]


def _delete_targets(tree: exp.Delete) -> list[TableRef]:
    """DELETE FROM t; DELETE <list> FROM <references>; DELETE FROM <list> USING <references>.

    The parser reads the list after FROM (when USING follows) as a table with joins, and
    puts USING's references in "using"; listed names are resolved against the references
    the way the server does (alias first, then table name), and a name that resolves to
    nothing makes every referenced table a target.
    """
    using = tree.args.get("using") or []
    if using:
        listed: list[exp.Expression] = list(_table_list(tree.this))
        references = [table for item in using for table in _table_list(item)]
    else:
        listed = list(tree.args.get("tables") or [])
        references = _table_list(tree.this)
    if not listed:
        return [_ref(table) for table in references]  # DELETE FROM t: the one table
    everything = [_ref(table) for table in references]
    refs: list[TableRef] = []
    for item in listed:
        if not isinstance(item, exp.Table):
            return everything + [ref for ref in refs if ref not in everything]
        matches = _resolve(item.name, item.db or None, references)
        if not matches:
            return [*everything, _ref(item)]
        refs.extend(_ref(table) for table in matches)
    return refs


# Used when the parser cannot read a statement we still know to be a write.
_INSERT_MODIFIERS = frozenset({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"})
_UPDATE_MODIFIERS = frozenset({"LOW_PRIORITY", "IGNORE"})
_DELETE_MODIFIERS = frozenset({"LOW_PRIORITY", "QUICK", "IGNORE", "FROM"})
_LIST_STARTERS = frozenset({"FROM", "USING", "JOIN", "STRAIGHT_JOIN", "UPDATE", "DELETE"})
_NAME_AFTER = frozenset({",", "JOIN", "STRAIGHT_JOIN"})
_JOINS = frozenset({"JOIN", "STRAIGHT_JOIN", "INNER", "CROSS", "LEFT", "RIGHT", "NATURAL"})
_NOT_NAMES = frozenset({"SELECT", "WITH", "VALUES", "TABLE", "LATERAL"})
_LIST_ENDS = frozenset({"SET", "WHERE", "ORDER", "LIMIT", "RETURNING", "VALUES", "VALUE"})


def lexical_dml_targets(tokens: list[Token], verb_index: int) -> list[TableRef]:
    """Targets of INSERT/REPLACE/UPDATE/DELETE from tokens. INSERT and REPLACE: the table
    after the modifiers. UPDATE and DELETE: every table named in the table references, at
    any parenthesis depth (``UPDATE (t JOIN other.u ON 1) SET …``), with ON conditions,
    index hints and USING (column) lists skipped — a superset, since aliases are not
    resolved."""
    verb = tokens[verb_index].word
    if verb in ("INSERT", "REPLACE"):
        name, _ = qualified_name(tokens, skip_words(tokens, verb_index + 1, _INSERT_MODIFIERS))
        return [name] if name else []
    modifiers = _UPDATE_MODIFIERS if verb == "UPDATE" else _DELETE_MODIFIERS
    return _reference_names(tokens, skip_words(tokens, verb_index + 1, modifiers), _LIST_ENDS)


# Where a query's table references end.
_QUERY_LIST_ENDS = _LIST_ENDS | {"GROUP", "HAVING", "WINDOW", "UNION", "EXCEPT", "INTERSECT"}
_QUERY_LIST_ENDS |= {"INTO", "FOR", "LOCK", "PROCEDURE"}


def lexical_query_reads(tokens: list[Token], select: int) -> list[TableRef]:
    """The tables in the FROM clause of the query whose SELECT is at ``select``, from tokens
    (for INSERT … SELECT without subqueries, which need no parse for this): every name in
    its table references, as for lexical_dml_targets — a superset."""
    depth = 0
    start = -1
    for index in range(select, len(tokens)):
        token = tokens[index]
        if token.kind is PUNCT and token.word in "()":
            depth += 1 if token.word == "(" else -1
            if depth < 0:  # the end of a parenthesised query: INSERT INTO t (SELECT …)
                return (
                    _reference_names(tokens[:index], start, _QUERY_LIST_ENDS) if start > 0 else []
                )
        elif depth == 0 and start < 0 and token.kind is WORD and token.word == "FROM":
            start = index
    return _reference_names(tokens, start, _QUERY_LIST_ENDS) if start > 0 else []


def _reference_names(tokens: list[Token], index: int, ends: frozenset[str]) -> list[TableRef]:
    refs: list[TableRef] = []
    depth = 0
    expect_name = True  # a table name may stand here
    skip_depth = -1  # inside an ON condition or a (column) list opened at this depth
    while index < len(tokens):
        token = tokens[index]
        word = token.word
        if token.kind is PUNCT and word == "(":
            depth += 1
            if skip_depth < 0 and _opens_name_list(tokens, index):
                skip_depth = depth
            expect_name = skip_depth < 0
        elif token.kind is PUNCT and word == ")":
            depth -= 1
            if 0 <= depth < skip_depth:
                skip_depth = -1
            expect_name = False
        elif depth == 0 and token.kind is WORD and (word in ends or _on_duplicate(tokens, index)):
            break
        elif skip_depth >= 0:
            if depth == skip_depth and (word == "," or word in _JOINS):
                skip_depth = -1
                expect_name = word in _NAME_AFTER
        elif token.kind is WORD and word == "ON":
            skip_depth = depth
        elif word == "," or (token.kind is WORD and word in _LIST_STARTERS):
            expect_name = True
        elif expect_name and token.is_identifier and word not in _NOT_NAMES:
            name, after = qualified_name(tokens, index)
            if name is not None and name not in refs:
                refs.append(name)
            expect_name = False
            index = after
            continue
        else:
            expect_name = False
        index += 1
    return refs


def _on_duplicate(tokens: list[Token], index: int) -> bool:
    """INSERT … SELECT … ON DUPLICATE KEY UPDATE: the ON that ends the query."""
    return (
        tokens[index].word == "ON"
        and index + 1 < len(tokens)
        and tokens[index + 1].word == "DUPLICATE"
    )


def _opens_name_list(tokens: list[Token], paren: int) -> bool:
    """A "(" that opens a list of indexes or partitions (USE INDEX (…), PARTITION (…)), not
    table references. USING (…) may be either (DELETE … USING (a JOIN b) or JOIN … USING
    (id)); its column names are reported as unqualified tables, which is harmless."""
    return paren > 0 and tokens[paren - 1].word in ("INDEX", "KEY", "PARTITION")
