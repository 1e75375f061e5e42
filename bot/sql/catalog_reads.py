"""Confining reads of information_schema to rows about the schemas a database may read.

information_schema is one catalog for the whole server: ``SELECT … FROM
information_schema.COLUMNS`` lists every schema's columns that the account can see, and
``SHOW PROCEDURE STATUS`` every schema's routines. A read of it must show only rows about the
database's own schema (and its configured read_schemas), whatever the query's own WHERE says.

The server has no per-query filter for that, so the statement that runs reads each catalog
view through a filter on the columns that name a row's schemas:

    SELECT TABLE_NAME FROM information_schema.COLUMNS c WHERE …
    SELECT TABLE_NAME FROM (SELECT * FROM information_schema.COLUMNS WHERE TABLE_SCHEMA
        = X'73686f70' AND BINARY TABLE_SCHEMA IN (X'73686f70') LIMIT 18446744073709551615) c
        WHERE …

Everything else in the statement stays byte for byte as written; the filter applies before
any of the query's own expressions, joins or aggregates see a row. That takes the LIMIT: a
derived table without one is merged into the query around it, whose WHERE then runs on every
schema's rows, before or beside the filter — ``CAST(TABLE_NAME AS INT)`` warns with each
name it reads, and an expression that errors on one row says that the row exists. A derived
table with a LIMIT is materialized on its own, neither merged nor handed the outer
conditions. Names are compared as bytes (BINARY) because information_schema compares them
case-insensitively while the server itself, under lower_case_table_names=0, does not:
``SHOP`` is not ``shop``. The plain ``=`` in front lets the server read one schema's
directory instead of every schema's (it scans them all for ``IN`` with several names, which
is slower but still confined).

Rows that also name an account (a privilege's GRANTEE) are kept only for the account the bot
runs as (and its current role): other accounts' grants are not the database's.

Another session's statement is never shown, whoever runs it: every thread, DM and approved
change runs on the bot's own account, so "the bot's account" is everybody. PROCESSLIST keeps
one row, the connection reading it (``ID = CONNECTION_ID()``): a person sees at most their
own statement. Every other way to another connection's statement or plan is refused: SHOW
[FULL] PROCESSLIST, SHOW EXPLAIN|ANALYZE FOR n, EXPLAIN|DESCRIBE … FOR CONNECTION n, the
InnoDB views of transactions and locks, SHOW ENGINE … STATUS, SHOW SLAVE|REPLICA STATUS
(its last error quotes a replicated statement), and the schemas performance_schema, sys and
mysql (statement history, threads, digests, the general and slow logs; accounts), whatever
read_schemas says.

Fail-closed rules:
- a view not listed below is refused (a newer server's view is not known to be safe);
- views about other connections, accounts or InnoDB's internals (INNODB_TRX,
  USER_STATISTICS…) name no schema a filter could test, so they are refused — except
  PROCESSLIST, whose one kept row is the reading connection's own;
- a catalog view the classifier saw but this module did not find written out (inside a
  string for EXECUTE IMMEDIATE, an executable comment, a view's or routine's body) is
  refused, since no filter could be put in front of it;
- SHOW forms that list every schema's objects or other connections' (DATABASES, PROCEDURE
  STATUS, OPEN TABLES without FROM, ENGINE … STATUS, the *_STATISTICS forms, PROCESSLIST,
  EXPLAIN and ANALYZE of another connection, in any FORMAT) are refused, naming the
  information_schema view to ask instead, whose rows are confined.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.sql.lexical import Piece, split
from bot.sql.risk import Statement, TableRef
from bot.sql.tokens import QUOTED, WORD, Token, tokenize

INFORMATION_SCHEMA = "information_schema"

# Views whose every row is about objects in schemas, and the columns naming those schemas:
# the first names the row's own schema (never NULL); the others name schemas it points into
# (a foreign key's parent, a trigger's table), which may be NULL.
ROWS_ABOUT_SCHEMAS: dict[str, tuple[str, ...]] = {
    "CHECK_CONSTRAINTS": ("CONSTRAINT_SCHEMA",),
    "COLUMNS": ("TABLE_SCHEMA",),
    "COLUMN_PRIVILEGES": ("TABLE_SCHEMA",),
    "EVENTS": ("EVENT_SCHEMA",),
    "FILES": ("TABLE_SCHEMA",),
    "GEOMETRY_COLUMNS": ("F_TABLE_SCHEMA", "G_TABLE_SCHEMA"),
    "INDEX_STATISTICS": ("TABLE_SCHEMA",),
    "KEY_COLUMN_USAGE": ("TABLE_SCHEMA", "CONSTRAINT_SCHEMA", "REFERENCED_TABLE_SCHEMA"),
    "PARAMETERS": ("SPECIFIC_SCHEMA",),
    "PARTITIONS": ("TABLE_SCHEMA",),
    "REFERENTIAL_CONSTRAINTS": ("CONSTRAINT_SCHEMA", "UNIQUE_CONSTRAINT_SCHEMA"),
    "ROUTINES": ("ROUTINE_SCHEMA",),
    "SCHEMATA": ("SCHEMA_NAME",),
    "SCHEMA_PRIVILEGES": ("TABLE_SCHEMA",),
    "STATISTICS": ("TABLE_SCHEMA", "INDEX_SCHEMA"),
    "TABLES": ("TABLE_SCHEMA",),
    "TABLE_CONSTRAINTS": ("TABLE_SCHEMA", "CONSTRAINT_SCHEMA"),
    "TABLE_PRIVILEGES": ("TABLE_SCHEMA",),
    "TABLE_STATISTICS": ("TABLE_SCHEMA",),
    "TRIGGERS": ("EVENT_OBJECT_SCHEMA", "TRIGGER_SCHEMA"),
    "VIEWS": ("TABLE_SCHEMA",),
    # The reading connection alone (_ACCOUNT_ROWS), when its default database is allowed.
    "PROCESSLIST": ("DB",),
}

# CURRENT_USER() is user@host. With a second "@" in it, where the user name ends is not
# known and another account could pass for this one: then no row is kept.
_ONE_ACCOUNT = "CHAR_LENGTH(CURRENT_USER()) = CHAR_LENGTH(REPLACE(CURRENT_USER(), '@', '')) + 1"
# GRANTEE as the server writes it ('user'@'host'; a role's 'role'@''): this account's, or
# its current role's.
_OWN_GRANTEE = (
    "BINARY GRANTEE IN (CONCAT('''', REPLACE(CURRENT_USER(), '@', '''@'''), ''''),"
    " CONCAT('''', CURRENT_ROLE(), '''@'''''))"
)
# Views whose rows name an account too: only the bot's own account's rows are kept.
_ACCOUNT_ROWS: dict[str, str] = {
    "COLUMN_PRIVILEGES": _OWN_GRANTEE,
    "SCHEMA_PRIVILEGES": _OWN_GRANTEE,
    "TABLE_PRIVILEGES": _OWN_GRANTEE,
    # Every thread runs on the bot's account: only the reading connection is its own.
    "PROCESSLIST": "ID = CONNECTION_ID()",
}

# A derived table with a LIMIT is materialized before the query around it reads a row: the
# server neither merges it into that query nor pushes that query's conditions into it.
_ALL_ROWS = "LIMIT 18446744073709551615"

# Views about the server, this session or character sets, naming no schema object: read
# whole, as SHOW VARIABLES or SHOW ENGINES are.
ABOUT_NO_SCHEMA = frozenset(
    {
        "ALL_PLUGINS",
        "APPLICABLE_ROLES",
        "CHARACTER_SETS",
        "COLLATIONS",
        "COLLATION_CHARACTER_SET_APPLICABILITY",
        "ENABLED_ROLES",
        "ENGINES",
        "GLOBAL_STATUS",
        "GLOBAL_VARIABLES",
        "INNODB_BUFFER_POOL_STATS",
        "INNODB_CMP",
        "INNODB_CMPMEM",
        "INNODB_METRICS",
        "KEYWORDS",
        "KEY_CACHES",
        "OPTIMIZER_TRACE",
        "PLUGINS",
        "PROFILING",
        "SESSION_STATUS",
        "SESSION_VARIABLES",
        "SPATIAL_REF_SYS",
        "SQL_FUNCTIONS",
        "SYSTEM_VARIABLES",
        "THREAD_POOL_GROUPS",
        "THREAD_POOL_QUEUES",
        "THREAD_POOL_STATS",
        "THREAD_POOL_WAITS",
        "USER_VARIABLES",
    }
)

# Why the rest cannot be confined. A view in neither table above nor here is unknown.
NOT_CONFINABLE: dict[str, str] = {
    "CLIENT_STATISTICS": "every client host's activity",
    "USER_STATISTICS": "every account's activity",
    "USER_PRIVILEGES": "privileges held on the whole server",
    "INNODB_TRX": "other connections' transactions and statements",
    "INNODB_LOCKS": "other connections' locks, on any schema's tables",
    "INNODB_LOCK_WAITS": "other connections' lock waits",
    "INNODB_BUFFER_PAGE": "cached pages of every schema's tables",
    "INNODB_BUFFER_PAGE_LRU": "cached pages of every schema's tables",
    "INNODB_CMP_PER_INDEX": "every schema's indexes",
    "TABLESPACES": "every schema's tablespaces",
    "INNODB_TABLESPACES_ENCRYPTION": "every schema's tablespaces",
    "INNODB_SYS_TABLES": "every schema's tables",
    "INNODB_SYS_TABLESTATS": "every schema's tables",
    "INNODB_SYS_TABLESPACES": "every schema's tablespaces",
    "INNODB_SYS_COLUMNS": "every schema's columns",
    "INNODB_SYS_FIELDS": "every schema's index fields",
    "INNODB_SYS_INDEXES": "every schema's indexes",
    "INNODB_SYS_FOREIGN": "every schema's foreign keys",
    "INNODB_SYS_FOREIGN_COLS": "every schema's foreign keys",
    "INNODB_SYS_VIRTUAL": "every schema's virtual columns",
    "INNODB_SYS_SEMAPHORE_WAITS": "other connections' waits",
    "INNODB_FT_BEING_DELETED": "the full-text index of whichever table the server points at",
    "INNODB_FT_CONFIG": "the full-text index of whichever table the server points at",
    "INNODB_FT_DEFAULT_STOPWORD": "the full-text index of whichever table the server points at",
    "INNODB_FT_DELETED": "the full-text index of whichever table the server points at",
    "INNODB_FT_INDEX_CACHE": "the full-text index of whichever table the server points at",
    "INNODB_FT_INDEX_TABLE": "the full-text index of whichever table the server points at",
    # Reading these resets the server's counters: a read that changes the server.
    "INNODB_CMP_RESET": "a reset of the server's compression counters",
    "INNODB_CMPMEM_RESET": "a reset of the server's compression counters",
    "INNODB_CMP_PER_INDEX_RESET": "a reset of the server's per-index counters",
}

# SHOW forms showing what lies beyond the database, what they show, and what to ask instead.
_EVERY_SCHEMAS = "objects of every schema on the server"
_OTHER_CONNECTIONS = "other connections' statements"
_REPLICATED = "replication's state, whose last error quotes a replicated statement"
_SHOW_BEYOND: dict[str, tuple[str, str]] = {
    "DATABASES": ("every schema on the server", "information_schema.SCHEMATA"),
    "SCHEMAS": ("every schema on the server", "information_schema.SCHEMATA"),
    "PROCEDURE STATUS": (_EVERY_SCHEMAS, "information_schema.ROUTINES"),
    "FUNCTION STATUS": (_EVERY_SCHEMAS, "information_schema.ROUTINES"),
    "PACKAGE STATUS": (_EVERY_SCHEMAS, "information_schema.ROUTINES"),
    "PACKAGE BODY": (_EVERY_SCHEMAS, "information_schema.ROUTINES"),
    "OPEN TABLES": (_EVERY_SCHEMAS, "SHOW OPEN TABLES FROM the database's schema"),
    "TABLE_STATISTICS": (_EVERY_SCHEMAS, "information_schema.TABLE_STATISTICS"),
    "INDEX_STATISTICS": (_EVERY_SCHEMAS, "information_schema.INDEX_STATISTICS"),
    "PROCESSLIST": (_OTHER_CONNECTIONS, "information_schema.PROCESSLIST"),
    "FULL PROCESSLIST": (_OTHER_CONNECTIONS, "information_schema.PROCESSLIST"),
    # SHOW EXPLAIN [FORMAT=JSON] FOR n, SHOW ANALYZE …: another connection's plan, progress.
    "EXPLAIN": (_OTHER_CONNECTIONS, "EXPLAIN of the query itself"),
    "ANALYZE": (_OTHER_CONNECTIONS, "EXPLAIN of the query itself"),
    "ENGINE": ("the engine's state: other schemas' statements, locks and deadlocks", ""),
    # The last replication error quotes the replicated statement it failed on.
    "SLAVE STATUS": (_REPLICATED, ""),
    "REPLICA STATUS": (_REPLICATED, ""),
    "ALL SLAVES": (_REPLICATED, ""),
    "ALL REPLICAS": (_REPLICATED, ""),
    "USER_STATISTICS": ("every account's activity", ""),
    "CLIENT_STATISTICS": ("every client host's activity", ""),
}

# The SHOW forms that stay inside the database (or read server settings and counters, as
# SHOW VARIABLES does); the ones above that do not are refused first. FROM/IN another schema
# is the guard's read confinement. Anything else is refused.
_SHOW_KNOWN = frozenset(
    {
        "TABLES", "TABLE", "COLUMNS", "FIELDS", "INDEX", "INDEXES", "KEYS", "CREATE",
        "TRIGGERS", "EVENTS", "STATUS", "VARIABLES", "WARNINGS", "ERRORS", "COUNT", "ENGINES",
        "PLUGINS", "CHARACTER", "CHARSET", "COLLATION", "PRIVILEGES", "AUTHORS",
        "CONTRIBUTORS", "GRANTS", "PROFILE", "PROFILES", "MASTER", "BINLOG", "BINARY",
        "RELAYLOG", "SLAVE", "SLAVES", "REPLICA", "REPLICAS", "PROCEDURE", "FUNCTION",
        "PACKAGE", "OPEN", "LOCALES", "USER_VARIABLES",
    }
)  # fmt: skip
_SHOW_MODIFIERS = frozenset({"FULL", "EXTENDED", "GLOBAL", "SESSION", "LOCAL", "ALL", "STORAGE"})

# Words that can follow a table in FROM without being its alias.
_NOT_ALIAS = frozenset(
    {
        "WHERE", "GROUP", "HAVING", "ORDER", "LIMIT", "PROCEDURE", "INTO", "FOR", "LOCK",
        "UNION", "EXCEPT", "INTERSECT", "MINUS", "WINDOW", "JOIN", "INNER", "CROSS", "LEFT",
        "RIGHT", "NATURAL", "STRAIGHT_JOIN", "FULL", "OUTER", "ON", "USING", "USE", "IGNORE",
        "FORCE", "PARTITION", "FETCH", "OFFSET", "RETURNING", "SET", "VALUES", "SELECT",
        "AND", "OR", "XOR", "NOT",
    }
)  # fmt: skip

# Statement kinds that read a catalog view's definition (its columns), not its rows.
_DEFINITION_KINDS = ("SHOW", "DESCRIBE")


# The server's own schemas: what every session ran and runs (performance_schema's threads,
# events_statements_* and digests; sys's views of them; mysql's general_log and slow_log),
# and the accounts (mysql.user). Never read, whatever read_schemas lists.
SESSIONS_SCHEMAS: dict[str, str] = {
    "performance_schema": "every session's threads and statements",
    "sys": "every session's threads and statements",
    "mysql": "the server's accounts and its logs of every session's statements",
}
# EXPLAIN [FORMAT=…] FOR CONNECTION n and DESCRIBE FOR CONNECTION n; any spelling that the
# classifier did not take apart is caught by the words themselves.
_FOR_CONNECTION = re.compile(r"\bFOR\s+CONNECTION\b")
OTHER_CONNECTION_KINDS = frozenset({"EXPLAIN FOR CONNECTION"})


@dataclass(frozen=True, slots=True)
class Unconfined:
    reason: str  # a sentence for the model: what it read, and what to ask instead


def other_sessions(table: TableRef, named: str = "") -> Unconfined | None:
    """Why reading ``table`` would show other sessions' statements or the server's accounts,
    else None. ``named``: how the refusal names it (its schema and name by default)."""
    schema = (table.schema or "").lower()
    what = SESSIONS_SCHEMAS.get(schema)
    if what is None:
        return None
    named = named or ".".join(part for part in (table.schema, table.name) if part)
    return Unconfined(
        f"Blocked: the statement reads {named}; {schema} holds {what}, which no one may read "
        "through dbagent (another thread's statements stay private). Ask about the "
        "database's own tables instead."
    )


def _code(piece: Piece) -> str:
    # An executable comment's content runs: read it as written.
    return piece.text if piece.executable_comment else piece.masked


def _other_connection(statement: Statement) -> Unconfined | None:
    if statement.kind in OTHER_CONNECTION_KINDS or (
        "CONNECTION" in statement.text.upper()
        and any(_FOR_CONNECTION.search(_code(piece).upper()) for piece in split(statement.text))
    ):
        return Unconfined(
            "Blocked: … FOR CONNECTION shows another connection's plan and statement, which "
            "stay private to it. EXPLAIN the query itself instead."
        )
    return None


def is_catalog(table: TableRef) -> bool:
    return table.schema is not None and table.schema.lower() == INFORMATION_SCHEMA


def reads_rows_whole(name: str) -> bool:
    """Whether a catalog view may be read whole (it names no schema object)."""
    return name.upper() in ABOUT_NO_SCHEMA


def confine(statement: Statement, schemas: Sequence[str], *, folds: bool) -> str | Unconfined:
    """What runs for a read-only ``statement``: its text, with every read of a catalog view
    about schemas filtered to rows about ``schemas``; or why that cannot be done.

    ``folds``: the server folds the case of names (lower_case_table_names ≠ 0)."""
    other = _other_connection(statement)
    if other is not None:
        return other
    for read in statement.reads:
        private = other_sessions(read)
        if private is not None:
            return private
    show = statement.kind.startswith("SHOW")
    # A whole catalog (SHOW TABLES FROM information_schema) is the list of its views' names.
    catalog = [read for read in statement.reads if is_catalog(read) and read.name]
    if not catalog and not show:
        return statement.text
    pieces = split(statement.text)
    if len(pieces) != 1:
        return Unconfined("Blocked: the statement could not be read as one statement.")
    if show:
        refused = _show_beyond_the_database(pieces[0])
        if refused is not None:
            return refused
    for read in catalog:
        problem = _not_confinable(read.name)
        if problem is not None:
            return problem
    if not catalog:
        return statement.text
    if statement.kind.startswith(_DEFINITION_KINDS):
        if "SELECT" in pieces[0].masked.upper():
            return Unconfined(
                f"Blocked: {statement.kind}'s subquery reads information_schema, whose rows "
                "could not be confined there. Query information_schema with SELECT instead."
            )
        return statement.text  # DESCRIBE information_schema.COLUMNS: the view's own columns
    return _filtered(pieces[0], catalog, list(schemas), folds)


def _filtered(
    piece: Piece, catalog: list[TableRef], schemas: list[str], folds: bool
) -> str | Unconfined:
    tokens = tokenize(piece)
    text = piece.text
    found: set[str] = set()
    edits: list[tuple[int, int, str]] = []
    for index, token in enumerate(tokens):
        if not (token.is_identifier and token.name.lower() == INFORMATION_SCHEMA):
            continue
        if index + 2 >= len(tokens) or tokens[index + 1].word != ".":
            continue  # not a qualifier: a column or alias of that name
        view = tokens[index + 2]
        if not view.is_identifier:
            continue
        if index + 3 < len(tokens) and tokens[index + 3].word == ".":
            return Unconfined(
                f"Blocked: information_schema.{view.name}.… names a column by its schema; "
                "name it by the table or an alias (c.TABLE_NAME) so its rows can be confined."
            )
        found.add(view.name.upper())
        columns = ROWS_ABOUT_SCHEMAS.get(view.name.upper())
        if columns is None:
            continue  # a view about no schema: read whole
        source = _source(view.name, columns, schemas, folds)
        before = tokens[index - 1] if index else None
        if before is not None and before.kind is WORD and before.word == "TABLE":
            edits.append((before.start, view.end, f"SELECT * FROM {source} AS {_quote(view)}"))
        elif _alias_follows(tokens, index + 3):
            edits.append((token.start, view.end, source))
        else:
            edits.append((token.start, view.end, f"{source} AS {_quote(view)}"))
    unseen = sorted({read.name for read in catalog if read.name.upper() not in found})
    if unseen:
        return Unconfined(
            f"Blocked: the statement reads information_schema.{unseen[0]} in a way whose rows "
            "could not be confined to this database's schemas (not written out as "
            "information_schema.<view> in a FROM clause). Query it with a plain SELECT."
        )
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return text


def _alias_follows(tokens: list[Token], index: int) -> bool:
    if index >= len(tokens):
        return False
    after = tokens[index]  # AS, a quoted name or a word that cannot follow a table
    return after.kind is QUOTED or (after.kind is WORD and after.word not in _NOT_ALIAS)


def _source(view: str, columns: tuple[str, ...], schemas: list[str], folds: bool) -> str:
    names = [name.lower() if folds else name for name in schemas]
    if not names:
        return f"(SELECT * FROM information_schema.`{view}` WHERE FALSE {_ALL_ROWS})"
    listed = ", ".join(_bytes(name) for name in names)
    own, *others = columns
    exact = f"BINARY LOWER({own})" if folds else f"BINARY {own}"
    # One name: the plain = lets the server read that schema alone.
    first = f"{own} = {_bytes(names[0])} AND " if len(names) == 1 else ""
    where = [f"{first}{exact} IN ({listed})"]
    for column in others:
        compared = f"BINARY LOWER({column})" if folds else f"BINARY {column}"
        where.append(f"({column} IS NULL OR {compared} IN ({listed}))")
    account = _ACCOUNT_ROWS.get(view.upper())
    if account is not None:
        where += [_ONE_ACCOUNT, account]
    return f"(SELECT * FROM information_schema.`{view}` WHERE {' AND '.join(where)} {_ALL_ROWS})"


def _bytes(name: str) -> str:
    # A hex literal reads the same under every sql_mode and character set: no quoting rules.
    return f"X'{name.encode().hex()}'"


def _quote(token: Token) -> str:
    return "`" + token.name.replace("`", "``") + "`"


def _not_confinable(name: str) -> Unconfined | None:
    upper = name.upper()
    if upper in ROWS_ABOUT_SCHEMAS or upper in ABOUT_NO_SCHEMA:
        return None
    why = NOT_CONFINABLE.get(upper)
    if why is None:
        return Unconfined(
            f"Blocked: information_schema.{name} is not a view dbagent knows how to confine to "
            "this database's schemas, so it is not read."
        )
    return Unconfined(
        f"Blocked: information_schema.{name} holds {why}, beyond this database; its rows "
        "cannot be confined to the database's schemas."
    )


def _show_beyond_the_database(piece: Piece) -> Unconfined | None:
    """Why a SHOW shows what lies beyond the database (or may), else None."""
    tokens = tokenize(piece, limit=8)
    words = [token.word for token in tokens[1:] if token.kind is WORD]
    for length in (2, 1):
        form = " ".join(words[:length])
        if form in _SHOW_BEYOND and not (form == "OPEN TABLES" and _names_a_schema(words)):
            what, instead = _SHOW_BEYOND[form]
            ask = f" Ask {instead} instead; its rows are confined to it." if instead else ""
            return Unconfined(f"Blocked: SHOW {form} shows {what}, beyond this database.{ask}")
    first = next((word for word in words if word not in _SHOW_MODIFIERS), "")
    if first not in _SHOW_KNOWN:
        # MariaDB answers SHOW <view> for plugins' information_schema views too: a form not
        # known here is not known to stay inside the database.
        return Unconfined(
            f"Blocked: SHOW {first} is not a SHOW form dbagent knows to stay inside this "
            "database. Query information_schema or the tables themselves instead."
        )
    return None


def _names_a_schema(words: list[str]) -> bool:
    # SHOW OPEN TABLES FROM|IN db …; an IN further on is the WHERE's (WHERE 1 IN (1)).
    return words[2:3] in (["FROM"], ["IN"])
