"""Reads of information_schema confined to rows about the database's schemas: what runs for
each statement, or why it is refused. One row per case, the reason in the row."""

from __future__ import annotations

import pytest

from bot.sql.catalog_reads import ABOUT_NO_SCHEMA, ROWS_ABOUT_SCHEMAS, Unconfined, confine
from bot.sql.risk import classify

SHOP = "X'73686f70'"  # 'shop' as a hex literal
# LIMIT keeps the filtered view a table of its own: never merged into the query around it.
ALL = "LIMIT 18446744073709551615"
FILTER = f"WHERE TABLE_SCHEMA = {SHOP} AND BINARY TABLE_SCHEMA IN ({SHOP}) {ALL}"


def runs(sql: str, schemas: tuple[str, ...] = ("shop",), folds: bool = False) -> str | Unconfined:
    (statement,) = classify(sql).statements
    return confine(statement, schemas, folds=folds)


# (sql, what runs, why)
CONFINED = [
    (
        "SELECT TABLE_NAME FROM information_schema.TABLES",
        f"SELECT TABLE_NAME FROM (SELECT * FROM information_schema.`TABLES` {FILTER}) AS `TABLES`",
        "the view is read through a filter and keeps its name for the query's own references",
    ),
    (
        "SELECT c.COLUMN_NAME FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = 'other'",
        "SELECT c.COLUMN_NAME FROM (SELECT * FROM information_schema.`COLUMNS` "
        f"WHERE TABLE_SCHEMA = X'73686f70' AND BINARY TABLE_SCHEMA IN (X'73686f70') {ALL}) c "
        "WHERE c.TABLE_SCHEMA = 'other'",
        "an alias stays the alias; the query's own WHERE cannot widen the filter, nor run "
        "before it (the filtered view is materialized, not merged into the query)",
    ),
    (
        "SELECT COUNT(*) FROM information_schema.ROUTINES AS r",
        "SELECT COUNT(*) FROM (SELECT * FROM information_schema.`ROUTINES` "
        f"WHERE ROUTINE_SCHEMA = X'73686f70' AND BINARY ROUTINE_SCHEMA IN (X'73686f70') {ALL})"
        " AS r",
        "an aggregate counts only the confined rows",
    ),
    (
        "SELECT * FROM `INFORMATION_SCHEMA` . /* c */ `schemata`",
        "SELECT * FROM (SELECT * FROM information_schema.`schemata` WHERE SCHEMA_NAME = "
        f"X'73686f70' AND BINARY SCHEMA_NAME IN (X'73686f70') {ALL}) AS `schemata`",
        "quoted, spaced and commented names are the same view",
    ),
    (
        "TABLE information_schema.VIEWS ORDER BY 1",
        f"SELECT * FROM (SELECT * FROM information_schema.`VIEWS` {FILTER}) AS `VIEWS` ORDER BY 1",
        "TABLE v is SELECT * FROM v",
    ),
    (
        "SELECT * FROM information_schema.ENGINES",
        "SELECT * FROM information_schema.ENGINES",
        "a view about no schema runs as written",
    ),
    (
        "DESCRIBE information_schema.COLUMNS",
        "DESCRIBE information_schema.COLUMNS",
        "a view's own columns are no schema's rows",
    ),
    (
        "SHOW OPEN TABLES FROM shop",
        "SHOW OPEN TABLES FROM shop",
        "SHOW OPEN TABLES of one schema is confined by the guard's read of that schema",
    ),
    (
        "SHOW OPEN TABLES IN shop WHERE In_use IN (0, 1)",
        "SHOW OPEN TABLES IN shop WHERE In_use IN (0, 1)",
        "and so with IN, and a WHERE after it",
    ),
    ("SELECT * FROM orders", "SELECT * FROM orders", "no catalog read: as written"),
    (
        "SHOW TABLES FROM information_schema",
        "SHOW TABLES FROM information_schema",
        "the catalog's list of views names no schema's objects",
    ),
    *[
        (sql, sql, f"{sql}: a SHOW form that stays inside the database or reads the server's")
        for sql in (
            "SHOW FULL TABLES",
            "SHOW TABLE STATUS LIKE 'o%'",
            "SHOW FULL COLUMNS FROM orders",
            "SHOW INDEX FROM orders",
            "SHOW CREATE TABLE orders",
            "SHOW TRIGGERS",
            "SHOW EVENTS",
            "SHOW GLOBAL STATUS LIKE 'Threads%'",
            "SHOW SESSION VARIABLES LIKE 'sql_mode'",
            "SHOW WARNINGS",
            "SHOW COUNT(*) ERRORS",
            "SHOW STORAGE ENGINES",
            "SHOW PLUGINS",
            "SHOW CHARACTER SET",
            "SHOW COLLATION LIKE 'utf8%'",
            "SHOW PRIVILEGES",
            "SHOW GRANTS",
            "SHOW PROFILES",
            "SHOW REPLICA HOSTS",
            "SHOW BINARY LOGS",
            "SHOW PROCEDURE CODE p",
        )
    ],
]


@pytest.mark.parametrize(("sql", "expected", "why"), CONFINED, ids=[r[-1] for r in CONFINED])
def test_what_runs_for_a_catalog_read(sql, expected, why):
    assert runs(sql) == expected, why


# (sql, words of the refusal, why)
REFUSED = [
    ("SHOW DATABASES", "information_schema.SCHEMATA", "every schema's name"),
    ("SHOW SCHEMAS LIKE 's%'", "information_schema.SCHEMATA", "the synonym"),
    ("SHOW PROCEDURE STATUS WHERE Db = 'x'", "ROUTINES", "every schema's procedures"),
    ("SHOW FUNCTION STATUS", "ROUTINES", "every schema's functions"),
    ("SHOW PACKAGE BODY STATUS", "ROUTINES", "every schema's packages"),
    ("SHOW OPEN TABLES", "FROM the database's schema", "open tables of every schema"),
    ("SHOW ENGINE INNODB STATUS", "deadlocks", "InnoDB's status names other schemas' rows"),
    ("SHOW ENGINE INNODB MUTEX", "the engine's state", "and its mutexes"),
    ("SHOW TABLE_STATISTICS", "information_schema.TABLE_STATISTICS", "every schema's tables"),
    ("SHOW INDEX_STATISTICS", "INDEX_STATISTICS", "every schema's indexes"),
    ("SHOW USER_STATISTICS", "every account's activity", "other accounts"),
    ("SHOW CLIENT_STATISTICS", "client host", "other clients"),
    ("SHOW FULL PROCESSLIST", "information_schema.PROCESSLIST", "other connections' SQL"),
    ("SHOW EXPLAIN FOR 12", "other connections", "another connection's plan"),
    ("SHOW EXPLAIN FORMAT=JSON FOR 12", "other connections", "in JSON"),
    ("SHOW ANALYZE FORMAT=JSON FOR 12", "other connections", "its running analysis"),
    ("SHOW PROCESSLIST", "information_schema.PROCESSLIST", "other connections' statements"),
    ("show /* c */ full processlist", "PROCESSLIST", "any case, a comment in between"),
    ("SHOW SLAVE STATUS", "quotes a replicated statement", "the last error quotes a statement"),
    ("SHOW SLAVE 'src' STATUS", "quotes a replicated statement", "a named source's"),
    ("SHOW REPLICA STATUS", "quotes a replicated statement", "the newer spelling"),
    ("SHOW ALL SLAVES STATUS", "quotes a replicated statement", "every source's"),
    ("SHOW ALL REPLICAS STATUS", "quotes a replicated statement", "every source's, newer"),
    ("EXPLAIN FOR CONNECTION 12", "another connection's plan", "another connection's plan"),
    ("EXPLAIN FORMAT=JSON FOR CONNECTION 12", "another connection's plan", "in JSON"),
    ("EXPLAIN FORMAT = 'tree' FOR CONNECTION 12", "another connection's plan", "quoted format"),
    ("EXPLAIN EXTENDED FOR CONNECTION 12", "another connection's plan", "EXTENDED"),
    ("EXPLAIN PARTITIONS FOR CONNECTION 12", "another connection's plan", "PARTITIONS"),
    ("DESCRIBE FOR CONNECTION 12", "another connection's plan", "DESCRIBE's spelling"),
    ("desc format=json for connection 12", "another connection's plan", "lower case DESC"),
    ("EXPLAIN FOR /* x */ CONNECTION 12", "another connection's plan", "a comment inside"),
    ("EXPLAIN /*! FOR CONNECTION 12 */", "another connection's plan", "executable comment"),
    ("EXPLAIN FOR CONNECTION (12)", "another connection's plan", "the id in parentheses"),
    (
        "SELECT * FROM performance_schema.events_statements_history",
        "performance_schema holds every session's threads and statements",
        "statement history",
    ),
    (
        "SELECT SQL_TEXT FROM PERFORMANCE_SCHEMA.events_statements_current",
        "every session's",
        "any case: the server's own schema",
    ),
    ("SELECT * FROM performance_schema.threads", "every session's", "threads' PROCESSLIST_INFO"),
    ("TABLE sys.processlist", "sys holds every session's", "sys's view of them"),
    ("SELECT * FROM sys.`x$session`", "sys holds", "sys's raw views"),
    ("SELECT * FROM mysql.general_log", "mysql holds", "the general log's statements"),
    ("SELECT * FROM mysql.slow_log", "mysql holds", "the slow log's statements"),
    ("SHOW TABLES FROM performance_schema", "performance_schema holds", "the schema's tables"),
    ("SHOW OPEN TABLES WHERE 1 IN (1)", "FROM the database's schema", "IN in the WHERE, no FROM"),
    (
        "SHOW OPEN TABLES LIKE 'from'",
        "FROM the database's schema",
        "a pattern naming FROM is no schema",
    ),
    ("SHOW QUERY_RESPONSE_TIME", "not a SHOW form dbagent knows", "a plugin's SHOW: unknown"),
    ("SHOW WSREP_MEMBERSHIP", "not a SHOW form dbagent knows", "a cluster's members"),
    ("SELECT * FROM information_schema.INNODB_TRX", "transactions", "others' transactions"),
    ("SELECT * FROM information_schema.INNODB_CMP_RESET", "reset", "a read that resets"),
    ("SELECT * FROM information_schema.USER_STATISTICS", "account", "accounts' activity"),
    ("SELECT * FROM information_schema.SEQUENCES", "not a view dbagent knows", "unknown view"),
    (
        "SELECT information_schema.TABLES.TABLE_NAME FROM information_schema.TABLES",
        "names a column by its schema",
        "a three-part column name would outlive the filter's alias",
    ),
    (
        "SHOW TABLES WHERE Tables_in_shop IN (SELECT TABLE_NAME FROM information_schema.TABLES)",
        "SHOW's subquery",
        "a SHOW cannot be rewritten, so its catalog subquery cannot be confined",
    ),
]


@pytest.mark.parametrize(("sql", "words", "why"), REFUSED, ids=[r[-1] for r in REFUSED])
def test_a_catalog_read_that_cannot_be_confined_is_refused(sql, words, why):
    refused = runs(sql)
    assert isinstance(refused, Unconfined), why
    assert refused.reason.startswith("Blocked: ") and words in refused.reason, why


def test_several_schemas_are_listed_and_compared_as_bytes():
    text = runs("SELECT * FROM information_schema.KEY_COLUMN_USAGE", ("shop", "shop_archive"))
    assert isinstance(text, str)
    listed = "X'73686f70', X'73686f705f61726368697665'"
    assert f"BINARY TABLE_SCHEMA IN ({listed})" in text
    assert f"(REFERENCED_TABLE_SCHEMA IS NULL OR BINARY REFERENCED_TABLE_SCHEMA IN ({listed}))" in (
        text
    ), "a key pointing into an unlisted schema is not shown"
    assert "TABLE_SCHEMA = X" not in text, "the one-schema look-up only with one schema"


def test_names_are_folded_only_when_the_server_folds_them():
    text = runs("SELECT * FROM information_schema.TABLES", ("Shop",), folds=True)
    assert isinstance(text, str) and "BINARY LOWER(TABLE_SCHEMA) IN (X'73686f70')" in text
    kept = runs("SELECT * FROM information_schema.TABLES", ("Shop",), folds=False)
    assert isinstance(kept, str) and "BINARY TABLE_SCHEMA IN (X'53686f70')" in kept


def test_no_schema_to_read_shows_no_rows():
    text = runs("SELECT * FROM information_schema.TABLES", ())
    assert isinstance(text, str) and "WHERE FALSE" in text


def test_every_view_of_the_catalog_tables_is_classified_once():
    assert not set(ROWS_ABOUT_SCHEMAS) & ABOUT_NO_SCHEMA


# The account the statement runs as, in GRANTEE's form ('user'@'host'), and its role's.
OWN_GRANTEE = (
    "BINARY GRANTEE IN (CONCAT('''', REPLACE(CURRENT_USER(), '@', '''@'''), ''''),"
    " CONCAT('''', CURRENT_ROLE(), '''@'''''))"
)
ONE_AT = "CHAR_LENGTH(CURRENT_USER()) = CHAR_LENGTH(REPLACE(CURRENT_USER(), '@', '')) + 1"


@pytest.mark.parametrize("view", ["SCHEMA_PRIVILEGES", "TABLE_PRIVILEGES", "COLUMN_PRIVILEGES"])
def test_privileges_are_shown_for_the_own_account_only(view):
    text = runs(f"SELECT * FROM information_schema.{view}")
    assert isinstance(text, str) and OWN_GRANTEE in text, "other accounts' grants stay hidden"
    assert ONE_AT in text, "a name holding '@' could read as another account: none is shown"


def test_connections_are_shown_for_the_reading_connection_only():
    text = runs("SELECT * FROM information_schema.PROCESSLIST")
    assert isinstance(text, str) and "BINARY DB IN (X'73686f70')" in text
    # Every thread runs on the bot's account: the account is no boundary, the connection is.
    assert "ID = CONNECTION_ID()" in text
    assert "SUBSTRING_INDEX(CURRENT_USER()" not in text


@pytest.mark.parametrize("schemas", [("shop", "performance_schema"), ("shop", "sys", "mysql")])
def test_the_servers_own_schemas_stay_closed_whatever_the_schemas_read(schemas):
    for sql in ("SELECT * FROM performance_schema.threads", "SELECT * FROM mysql.user"):
        (statement,) = classify(sql).statements
        refused = confine(statement, schemas, folds=False)
        assert isinstance(refused, Unconfined) and "no one may read" in refused.reason, sql
