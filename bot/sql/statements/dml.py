"""Queries, SHOW, and DML (INSERT, REPLACE, UPDATE, DELETE): their targets, the tables they
read and the functions they call."""

from __future__ import annotations

import re

from sqlglot import exp

from bot.sql.lexical import Piece
from bot.sql.queries import (
    judge_query,
    judge_show,
    parse,
    reach,
    subquery_reads,
)
from bot.sql.risk import Risk, TableRef
from bot.sql.statements.words import CALLED_NAME, IF_EXISTS
from bot.sql.targets import (
    dml_targets,
    lexical_dml_targets,
    lexical_query_reads,
    query_reads,
)
from bot.sql.tokens import (
    Token,
    qualified_name,
    skip_words,
    tokenize,
)
from bot.sql.verdict import SERVER, Verdict, whole_schema

_INSERT_CLAUSES = re.compile(r"\b(?:IGNORE|SELECT)\b|\bON\s+DUPLICATE\s+KEY\s+UPDATE\b")


_INSERT_NAME_MODIFIERS = frozenset({"LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO"})


def query_statement(piece: Piece, first: str, depth: int) -> Verdict:
    return judge_query(piece, first)


def show_statement(piece: Piece, first: str, depth: int) -> Verdict:
    verdict = judge_show(piece)
    upper = piece.masked.upper()
    words = upper.split(None, 4)[1:4]
    if words[:1] == ["PROCESSLIST"] or words[:2] == ["FULL", "PROCESSLIST"]:
        verdict.add_reads([PROCESSLIST_TABLE])  # the commonest SHOW with reads, without tokens
    elif _SHOW_READS_HINT.search(upper):
        verdict.add_reads(_show_reads(tokenize(piece, limit=12)))  # enough for any SHOW
    if "SELECT" in upper:
        verdict.add_reads(subquery_reads(piece, upper))  # SHOW … WHERE x IN (SELECT …)
    return verdict


# A SHOW without one of these words reads only server metadata (names, settings, counters).
_SHOW_READS_HINT = re.compile(r"\b(?:FROM|IN|CREATE|CODE|PROCESSLIST|EVENTS|GRANTS|FOR)\b")


# SHOW forms naming a table (or a database, then a whole schema) after FROM/IN.
_SHOW_FROM = frozenset(
    {"TABLES", "STATUS", "TRIGGERS", "EVENTS", "COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS"}
)
_SHOW_OF_TABLE = frozenset({"COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS"})
_SHOW_CREATE = frozenset(
    {"TABLE", "VIEW", "SEQUENCE", "PROCEDURE", "FUNCTION", "TRIGGER", "EVENT", "PACKAGE"}
)
# Other connections' statements (with their literal values): what PROCESSLIST holds.
PROCESSLIST_TABLE = TableRef("information_schema", "PROCESSLIST")


def _show_reads(tokens: list[Token]) -> list[TableRef]:
    """What a SHOW reads beyond server metadata (names, settings, counters): a table's
    columns, indexes or definition, a schema's tables, other connections' statements,
    binary-log row events (every schema's data) and accounts. As written."""
    words = [token.word for token in tokens[1:4]]
    index = skip_words(tokens, 1, frozenset({"FULL", "EXTENDED", "OPEN", "TABLE"}))
    what = tokens[index].word if index < len(tokens) else ""
    if "CREATE" in words[:1]:
        obj = tokens[2].word if len(tokens) > 2 else ""
        if obj in ("DATABASE", "SCHEMA"):
            at = skip_words(tokens, 3, IF_EXISTS)
            return [whole_schema(tokens[at].name)] if at < len(tokens) else []
        if obj in _SHOW_CREATE:
            name, _ = qualified_name(tokens, skip_words(tokens, 3, frozenset({"BODY"})))
            return [name] if name else []
        return [SERVER]  # SHOW CREATE USER / ROLE / SERVER: accounts and servers
    if len(words) > 1 and words[1] == "CODE":
        name, _ = qualified_name(tokens, 3)  # SHOW PROCEDURE|FUNCTION CODE name
        return [name] if name else []
    if what in ("PROCESSLIST",) or words[:2] in (["EXPLAIN", "FOR"], ["ANALYZE", "FOR"]):
        return [PROCESSLIST_TABLE]
    if len(words) > 1 and words[1] == "EVENTS" and words[0] in ("BINLOG", "RELAYLOG"):
        return [SERVER]
    if words[:2] == ["GRANTS", "FOR"] and (len(words) < 3 or words[2] != "CURRENT_USER"):
        return [SERVER]  # another account's privileges
    if what not in _SHOW_FROM:
        return []
    names: list[TableRef] = []
    position = index + 1
    while position + 1 < len(tokens) and tokens[position].word in ("FROM", "IN"):
        name, position = qualified_name(tokens, position + 1)
        if name is not None:
            names.append(name)
    if what not in _SHOW_OF_TABLE:
        return [whole_schema(name.name) for name in names[:1]]
    if len(names) == 2:  # SHOW COLUMNS FROM t FROM db: both readings, a superset
        return [names[0], TableRef(names[1].name, names[0].name)]
    return names[:1]


_DML_REASONS = {
    "INSERT": "INSERT adds rows",
    "REPLACE": "REPLACE deletes and re-inserts rows",
    "UPDATE": "UPDATE changes rows",
    "DELETE": "DELETE removes rows",
}


def _dml_reads(
    piece: Piece, first: str, tree: exp.Expression | None, targets: list[TableRef]
) -> list[TableRef]:
    """What a DML statement reads: every table in its tree (its targets too, joins,
    subqueries, INSERT … SELECT's source). INSERT is parsed for this only when it holds a
    query; a statement the parser cannot read reads its targets and its subqueries'
    tables (a query that does not parse: the whole server)."""
    upper = piece.masked.upper()
    if tree is None and "SELECT" in upper:
        if upper.count("SELECT") == 1 and "TABLE" not in upper and "WITH" not in upper:
            # INSERT … SELECT without subqueries: its FROM clause, without a parse.
            tokens = tokenize(piece)
            select = next((i for i, token in enumerate(tokens) if token.word == "SELECT"), -1)
            if select >= 0:
                return [*targets, *lexical_query_reads(tokens, select)]
        if first == "INSERT":
            tree, _ = parse(piece.code)
    if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        return query_reads(tree, upper)
    reads = list(targets)
    if "SELECT" in upper:
        reads += subquery_reads(piece, upper)
    return reads


def dml_statement(piece: Piece, first: str, depth: int) -> Verdict:
    verdict = Verdict(Risk.WRITE, first, _DML_REASONS[first])
    tree: exp.Expression | None = None
    not_calls = CALLED_NAME
    if first in ("INSERT", "REPLACE"):
        # The target is simply the first name after the modifiers; no parse needed (and the
        # parser only knows REPLACE as an opaque Command).
        tokens = tokenize(piece, limit=16)
        targets = lexical_dml_targets(tokens, 0)
        _, after = qualified_name(tokens, skip_words(tokens, 1, _INSERT_NAME_MODIFIERS))
        if targets and after:
            not_calls = frozenset({0, tokens[after - 1].start})  # INSERT INTO t (a, b)
    else:
        # UPDATE and DELETE name their targets through aliases and joins: parse to resolve.
        tree, _ = parse(piece.code)
        if isinstance(tree, (exp.Update, exp.Delete)):
            targets = dml_targets(tree)
        else:
            targets = lexical_dml_targets(tokenize(piece), 0)
    verdict.add_targets(targets)
    verdict.add_reads(_dml_reads(piece, first, tree, targets))
    reach(piece, verdict, reads=False, not_calls=not_calls)
    if first in ("INSERT", "REPLACE"):
        for match in _INSERT_CLAUSES.finditer(piece.masked.upper()):
            clause = match.group()
            if clause == "IGNORE":
                verdict.add_reason(f"{first} IGNORE adds rows, silently skipping failing ones")
            elif clause == "SELECT":
                verdict.add_reason(f"{first} … SELECT copies rows from a query into a table")
            else:
                verdict.add_reason("INSERT … ON DUPLICATE KEY UPDATE also changes existing rows")
    if first in ("UPDATE", "DELETE") and len(targets) > 1:
        verdict.add_reason(f"a multi-table {first} changes rows in several tables")
    if not targets:
        verdict.add_reason("its target table could not be determined")
    return verdict
