"""What a statement reads and which stored routines it runs, for the guard's confinement of
reads to the database's schemas and its look-up of routine bodies. One row per case."""

from __future__ import annotations

import pytest

from bot.sql.risk import Risk, TableRef, classify

SERVER = TableRef("*", "*")


def ref(name: str) -> TableRef:
    schema, _, table = name.rpartition(".")
    return TableRef(schema or None, table)


# (sql, what it reads, as written, why)
READS = [
    ("SELECT * FROM mysql.user", ["mysql.user"], "another schema's table"),
    ("SELECT * FROM orders", ["orders"], "an unqualified table: the default schema"),
    ("SELECT 1", [], "no table at all"),
    ("SELECT 1 FROM DUAL", [], "DUAL is no table"),
    (
        "SELECT o.id FROM orders o JOIN other.c ON c.id = o.c",
        ["orders", "other.c"],
        "a join",
    ),
    (
        "SELECT * FROM t WHERE id IN (SELECT id FROM other.x)",
        ["t", "other.x"],
        "a subquery",
    ),
    (
        "SELECT (SELECT MAX(a) FROM other.y) AS m",
        ["other.y"],
        "a scalar subquery in the select list",
    ),
    ("SELECT * FROM t1 UNION SELECT * FROM other.t2", ["t1", "other.t2"], "a union"),
    (
        "WITH c AS (SELECT * FROM other.x) SELECT * FROM c",
        ["other.x"],
        "a CTE is no table, what it reads is",
    ),
    ("TABLE other.t", ["other.t"], "TABLE"),
    ("SELECT * FROM `Other Schema`.`T`", ["Other Schema.T"], "quoted names, unquoted, case kept"),
    (
        "SELECT * FROM information_schema.TABLES",
        ["information_schema.TABLES"],
        "information_schema, as written",
    ),
    ("SHOW COLUMNS FROM other.t", ["other.t"], "SHOW COLUMNS of another schema's table"),
    ("SHOW COLUMNS FROM t FROM other", ["t", "other.t"], "SHOW COLUMNS … FROM db, both readings"),
    ("SHOW INDEX FROM other.t", ["other.t"], "SHOW INDEX"),
    ("SHOW TABLES FROM other", ["other."], "SHOW TABLES FROM a schema: the whole schema"),
    ("SHOW TABLE STATUS IN other", ["other."], "SHOW TABLE STATUS IN"),
    ("SHOW TRIGGERS FROM other", ["other."], "SHOW TRIGGERS FROM"),
    ("SHOW CREATE TABLE other.t", ["other.t"], "SHOW CREATE TABLE"),
    ("SHOW CREATE VIEW other.v", ["other.v"], "SHOW CREATE VIEW"),
    ("SHOW CREATE PROCEDURE other.p", ["other.p"], "SHOW CREATE PROCEDURE"),
    ("SHOW CREATE DATABASE other", ["other."], "SHOW CREATE DATABASE"),
    ("SHOW PROCESSLIST", ["information_schema.PROCESSLIST"], "other connections' statements"),
    ("SHOW FULL PROCESSLIST", ["information_schema.PROCESSLIST"], "in full"),
    ("SHOW BINLOG EVENTS", ["*.*"], "binary-log row events hold every schema's data"),
    ("SHOW GRANTS FOR root", ["*.*"], "another account's privileges"),
    ("SHOW CREATE USER root", ["*.*"], "an account"),
    ("SHOW TABLES WHERE 1 IN (SELECT 1 FROM other.t)", ["other.t"], "a subquery in SHOW … WHERE"),
    ("DESCRIBE other.t", ["other.t"], "DESCRIBE"),
    ("EXPLAIN other.t", ["other.t"], "EXPLAIN of a table"),
    ("EXPLAIN SELECT * FROM other.t", ["other.t"], "EXPLAIN of a query reads what it would"),
    (
        "INSERT INTO t SELECT * FROM other.u",
        ["t", "other.u"],
        "the source of INSERT … SELECT",
    ),
    ("REPLACE INTO t SELECT * FROM other.u", ["t", "other.u"], "the source of REPLACE … SELECT"),
    (
        "INSERT INTO t VALUES ((SELECT MAX(a) FROM other.u))",
        ["t", "other.u"],
        "a subquery in VALUES",
    ),
    (
        "UPDATE t SET a = (SELECT b FROM other.u LIMIT 1)",
        ["t", "other.u"],
        "a subquery in UPDATE … SET",
    ),
    (
        "DELETE FROM t WHERE id IN (SELECT id FROM other.x)",
        ["t", "other.x"],
        "a subquery in DELETE … WHERE",
    ),
    ("SET @a = (SELECT pw FROM mysql.user LIMIT 1)", ["mysql.user"], "a subquery in SET"),
    ("DO (SELECT 1 FROM other.t)", ["other.t"], "a subquery in DO"),
    ("CALL p((SELECT a FROM other.t))", ["other.t"], "a subquery as a CALL argument"),
    ("CREATE TABLE t AS SELECT * FROM other.u", ["other.u"], "CREATE TABLE … SELECT"),
    ("CREATE TABLE t LIKE other.u", ["other.u"], "CREATE TABLE … LIKE copies a definition"),
    ("CREATE TABLE t (LIKE other.u)", ["other.u"], "CREATE TABLE (LIKE …)"),
    ("CREATE VIEW v AS SELECT * FROM other.u", ["other.u"], "a view reads its tables"),
    ("HANDLER other.t OPEN", ["other.t"], "HANDLER reads rows"),
    (
        "CREATE PROCEDURE p() SELECT * FROM mysql.user",
        ["mysql.user"],
        "a procedure's body reads when it is called",
    ),
    # Every name a function takes is read: the server's answer (a value, or which error)
    # tells what exists by that name in that schema.
    ("SELECT LASTVAL(other.s)", ["other.s"], "LASTVAL names a sequence of another schema"),
    ("SELECT lastval ( `Other` . s )", ["Other.s"], "any case, gaps, quotes"),
    ("SELECT LASTVAL(SHOP.s)", ["SHOP.s"], "the other-case schema, as written"),
    ("SELECT LASTVAL(mysql.user)", ["mysql.user"], "the accounts table as a sequence"),
    ("SELECT PREVIOUS VALUE FOR other.s", ["other.s"], "PREVIOUS VALUE FOR"),
    ("select previous value for mysql.user", ["mysql.user"], "in lower case"),
    ("SELECT other.s.currval", ["other.s"], "the .currval spelling"),
    ("SELECT NEXTVAL(other.s)", ["other.s"], "NEXTVAL reads the name it advances"),
    ("SELECT SETVAL(other.s, 5)", ["other.s"], "SETVAL too"),
    ("SELECT other.s.nextval", ["other.s"], "the .nextval spelling"),
    ("SELECT LASTVAL(s)", ["s"], "an unqualified sequence: the default schema"),
    ("SELECT 1 FROM t WHERE a = LASTVAL(other.s)", ["t", "other.s"], "in a WHERE"),
    ("SET @a = LASTVAL(other.s)", ["other.s"], "in a SET"),
    ("DO LASTVAL(other.s)", ["other.s"], "in a DO"),
    ("SHOW TABLES WHERE LASTVAL(other.s)", ["other.s"], "in SHOW … WHERE"),
    ("DELETE FROM t WHERE a = LASTVAL(other.s)", ["t", "other.s"], "in a change's WHERE"),
    ("SELECT LASTVAL(@v)", ["*.*"], "a name that cannot be read off the text: unbounded"),
    ("SELECT IS_USED_LOCK('app')", ["*.*"], "a named lock is the whole server's"),
    ("SELECT IS_FREE_LOCK('app')", ["*.*"], "whether another session holds one"),
    ("SELECT BINLOG_GTID_POS('bin.000001', 4)", ["*.*"], "the binary log's files"),
    ("SELECT 'LASTVAL(other.s)'", [], "a literal names nothing"),
    ("SELECT t.lastval FROM t", ["t"], "a column named lastval is no call"),
    (
        "EXPLAIN FOR CONNECTION 5",
        ["information_schema.PROCESSLIST"],
        "another connection's plan: what PROCESSLIST holds",
    ),
    ("SELECT * FROM t WHERE", ["*.*"], "a query the parser cannot read: unbounded"),
    ("SET @a = (SELECT FROM WHERE)", ["*.*"], "a subquery the parser cannot read: unbounded"),
]


@pytest.mark.parametrize(("sql", "reads", "why"), READS, ids=[r[-1] for r in READS])
def test_every_table_a_statement_reads_is_reported(sql: str, reads: list[str], why: str) -> None:
    (statement,) = classify(sql).statements
    assert list(statement.reads) == [ref(name) for name in reads]


# (sql, the routines it runs, why)
CALLS = [
    ("CALL p()", ["p"], "an unqualified procedure: the default schema"),
    ("CALL p", ["p"], "CALL without parentheses"),
    ("CALL other.p(1)", ["other.p"], "a qualified procedure"),
    ("CALL `My Proc`()", ["My Proc"], "a quoted name, unquoted, case kept"),
    ("CALL `other`.`P`(1)", ["other.P"], "both parts quoted"),
    ("CALL p(FROM_BASE64('VVBEQVRF'))", ["p"], "built-in arguments run no routine"),
    ("CALL p(q(1))", ["p", "q"], "a stored function in an argument"),
    ("SELECT f(1)", ["f"], "a stored function in a query"),
    ("SELECT other.f(1)", ["other.f"], "a qualified stored function"),
    ("SELECT `sum`(a) FROM t", ["sum"], "a quoted built-in name calls a stored function"),
    ("SELECT SUM (a) FROM t", ["SUM"], "a gap before ( calls a stored function"),
    ("SELECT COUNT(*), NOW() FROM t", [], "built-ins run no routine"),
    ("UPDATE t SET a = f(1)", ["f"], "a stored function in UPDATE"),
    ("INSERT INTO t (a) VALUES (f(1))", ["f"], "INSERT's column list is no call, f is"),
    ("SET @a = f(1)", ["f"], "a stored function in SET"),
    ("DO f(1)", ["f"], "a stored function in DO"),
    ("CREATE PROCEDURE p() CALL q()", ["q"], "a procedure calling another"),
    ("CREATE TABLE t (a INT, KEY k (a))", [], "a key's column list is no call"),
]


@pytest.mark.parametrize(("sql", "calls", "why"), CALLS, ids=[r[-1] for r in CALLS])
def test_every_routine_a_statement_runs_is_reported(sql: str, calls: list[str], why: str) -> None:
    (statement,) = classify(sql).statements
    assert sorted(statement.calls, key=str) == sorted((ref(name) for name in calls), key=str)


ORDINARY_READS = [
    "SELECT id, email FROM customers WHERE id = 42",
    "SELECT status, COUNT(*) FROM orders GROUP BY status",
    "SELECT * FROM shop.orders o JOIN shop.customers c ON c.id = o.customer_id",
    "SHOW TABLES",
    "SHOW CREATE TABLE orders",
    "SHOW COLUMNS FROM orders",
    "SHOW INDEX FROM shop.orders",
    "DESCRIBE orders",
    "EXPLAIN SELECT * FROM orders WHERE id = 1",
    "EXPLAIN FORMAT=JSON SELECT * FROM shop.orders",
]


@pytest.mark.parametrize("sql", ORDINARY_READS)
def test_ordinary_reads_of_the_own_schema_stay_read_only_and_name_only_it(sql: str) -> None:
    (statement,) = classify(sql).statements
    assert statement.risk is Risk.READ_ONLY
    assert statement.calls == ()
    assert all(read.schema in (None, "shop") for read in statement.reads)


def test_the_new_fields_default_to_empty_for_existing_constructors() -> None:
    from bot.sql.risk import Statement

    statement = Statement("SELECT 1", 0, 8, Risk.READ_ONLY, "SELECT", ("r",), ())
    assert (statement.reads, statement.calls) == ((), ())
