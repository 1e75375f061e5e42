"""Which tables a parsed INSERT, UPDATE or DELETE writes.

Read from the parser's tree, where aliases can be resolved. When the writer of a
multi-table statement cannot be pinned down (an unqualified SET column, an alias that
matches nothing), every table in the statement's table list is reported: a superset, so a
guard comparing schemas errs towards refusing.
"""

from __future__ import annotations

from sqlglot import exp

from bot.sql.risk import TableRef
from bot.sql.tokens import PUNCT, WORD, Token, name_list, qualified_name, skip_words


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
        if ref.schema is None and ref.name.lower() in ctes:
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
        if ref.name and not (ref.schema is None and ref.name.lower() in ctes) and ref not in refs:
            refs.append(ref)
    return refs


def _ref(table: exp.Table) -> TableRef:
    return TableRef(table.db or None, table.name)


def _cte_names(tree: exp.Expression) -> set[str]:
    with_ = tree.args.get("with_") or tree.args.get("with")
    if not isinstance(with_, exp.With):
        return set()
    return {cte.alias.lower() for cte in with_.expressions if isinstance(cte, exp.CTE)}


def _insert_targets(tree: exp.Insert) -> list[TableRef]:
    target = tree.this
    if isinstance(target, exp.Schema):
        target = target.this
    return [_ref(target)] if isinstance(target, exp.Table) else []


def _table_list(node: exp.Expression | None) -> list[exp.Table]:
    """Base tables of a table reference list (a table and its joins); not derived tables."""
    tables: list[exp.Table] = []
    if isinstance(node, exp.Table):
        tables.append(node)
        for join in node.args.get("joins") or []:
            tables.extend(_table_list(join.this))
    elif isinstance(node, exp.From):
        tables.extend(_table_list(node.this))
    return tables


def _resolve(qualifier: str, schema: str | None, tables: list[exp.Table]) -> list[exp.Table]:
    """Tables a column qualifier (alias or name) refers to."""
    lowered = qualifier.lower()
    matches = [table for table in tables if table.alias and table.alias.lower() == lowered]
    if not matches:
        matches = [
            table
            for table in tables
            if not table.alias
            and table.name.lower() == lowered
            and (schema is None or (table.db or "").lower() == schema.lower())
        ]
    return matches


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
    tables = _table_list(tree.this)
    for using in tree.args.get("using") or []:
        tables.extend(_table_list(using))
    listed = tree.args.get("tables") or []
    if not listed:
        return [_ref(tables[0])] if tables else []
    refs: list[TableRef] = []
    for item in listed:
        if not isinstance(item, exp.Table):
            return [_ref(table) for table in tables]
        matches = _resolve(item.name, item.db or None, tables)
        if matches:
            refs.extend(_ref(table) for table in matches)
        else:
            refs.append(_ref(item))
    return refs


# Used when the parser cannot read a statement we still know to be a write.
_INSERT_MODIFIERS = frozenset({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"})
_UPDATE_MODIFIERS = frozenset({"LOW_PRIORITY", "IGNORE"})
_DELETE_MODIFIERS = frozenset({"LOW_PRIORITY", "QUICK", "IGNORE", "FROM"})
_LIST_STARTERS = frozenset({"FROM", "USING", "JOIN", "STRAIGHT_JOIN", "UPDATE", "DELETE"})
_LIST_ENDS = frozenset({"SET", "WHERE", "ORDER", "LIMIT", "RETURNING", "VALUES", "VALUE"})


def lexical_dml_targets(tokens: list[Token], verb_index: int) -> list[TableRef]:
    """Targets of INSERT/REPLACE/UPDATE/DELETE from tokens: every table named in its table
    list(s) at the top level (a superset when aliases cannot be resolved)."""
    verb = tokens[verb_index].word
    if verb in ("INSERT", "REPLACE"):
        name, _ = qualified_name(tokens, skip_words(tokens, verb_index + 1, _INSERT_MODIFIERS))
        return [name] if name else []
    refs: list[TableRef] = []
    modifiers = _UPDATE_MODIFIERS if verb == "UPDATE" else _DELETE_MODIFIERS
    refs.extend(name_list(tokens, skip_words(tokens, verb_index + 1, modifiers)))
    depth = 0
    for index in range(verb_index + 1, len(tokens)):
        token = tokens[index]
        if token.kind is PUNCT and token.word in "()":
            depth += 1 if token.word == "(" else -1
        elif depth == 0 and token.kind is WORD and token.word in _LIST_ENDS:
            break
        elif depth == 0 and (token.word == "," or token.word in _LIST_STARTERS):
            for ref in name_list(tokens, index + 1):
                if ref not in refs:
                    refs.append(ref)
    return refs
