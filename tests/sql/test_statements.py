"""Statements that reach beyond what they name: stored-program bodies, quoted names, and
every clause that names another table. One row per case, the reason in the row."""

from __future__ import annotations

import pytest

from bot.sql.risk import Risk, TableRef, classify

R, W, D, T = Risk.READ_ONLY, Risk.WRITE, Risk.DDL, Risk.TRANSACTION
SERVER = TableRef("*", "*")

# (sql, at least this risk, a target it must have, why)
BODIES = [
    (
        "CREATE PROCEDURE p(s TEXT) EXECUTE IMMEDIATE s",
        T,
        SERVER,
        "EXECUTE IMMEDIATE of a parameter runs any statement anywhere",
    ),
    (
        "CREATE PROCEDURE p() EXECUTE IMMEDIATE 'UPDATE t SET a = 1'",
        D,
        SERVER,
        "dynamic SQL in a body reaches the whole server even from a literal",
    ),
    (
        "CREATE PROCEDURE p() PREPARE s FROM 'SELECT 1'",
        D,
        SERVER,
        "PREPARE in a body is dynamic SQL",
    ),
    ("CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO EXECUTE s", D, SERVER, "EXECUTE in an event"),
    ("CREATE PROCEDURE p() COMMIT", T, SERVER, "COMMIT in a body is transaction control"),
    ("CREATE PROCEDURE p() ROLLBACK", T, SERVER, "ROLLBACK in a body"),
    ("CREATE PROCEDURE p() START TRANSACTION", T, SERVER, "START TRANSACTION in a body"),
    (
        "CREATE PROCEDURE p() SET autocommit = 0",
        T,
        SERVER,
        "SET autocommit in a body changes the caller's transactions",
    ),
    (
        "CREATE PROCEDURE p() SET `autocommit` = 0",
        T,
        SERVER,
        "the quoted variable in a body too",
    ),
    (
        "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET @@session.tx_read_only = 0",
        T,
        SERVER,
        "a trigger switching off the read-only session",
    ),
    (
        "CREATE PROCEDURE p() FROBNICATE everything",
        D,
        SERVER,
        "a body the classifier cannot read reaches the whole server",
    ),
    (
        "CREATE PROCEDURE p() UPDATE other_schema.t SET a = 1",
        D,
        TableRef("other_schema", "t"),
        "the body's target is the procedure's target",
    ),
    (
        "CREATE PROCEDURE p() BEGIN UPDATE t SET a = 1",
        D,
        SERVER,
        "a compound body arrives cut at its first ';' and is not bounded",
    ),
    (
        "CREATE PROCEDURE p() SET GLOBAL max_connections = 1",
        D,
        SERVER,
        "a global setting in a body",
    ),
    (
        "CREATE PROCEDURE p() GRANT ALL ON *.* TO u",
        D,
        SERVER,
        "GRANT in a body",
    ),
]


@pytest.mark.parametrize(("sql", "risk", "target", "why"), BODIES, ids=[r[-1] for r in BODIES])
def test_a_stored_program_is_as_risky_as_its_body_and_reaches_what_it_reaches(
    sql: str, risk: Risk, target: TableRef, why: str
) -> None:
    (statement,) = classify(sql).statements
    assert statement.risk.rank >= risk.rank
    assert target in statement.targets


def test_a_body_that_only_writes_its_own_schema_stays_ddl_with_its_targets() -> None:
    (statement,) = classify(
        "CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW DELETE FROM u"
    ).statements
    assert statement.risk is D
    assert statement.targets == (TableRef(None, "tr"), TableRef(None, "t"), TableRef(None, "u"))


def test_a_body_that_runs_dynamic_sql_says_why_it_is_refused() -> None:
    (statement,) = classify("CREATE PROCEDURE p(s TEXT) EXECUTE IMMEDIATE s").statements
    assert any("dynamic SQL" in reason for reason in statement.reasons)


# (sql, the risk, a target it must have or None, why): a quoted name is the same name.
QUOTED = [
    ("SET `autocommit` = 0", T, None, "a backquoted autocommit"),
    ("SET `AutoCommit` = 0", T, None, "in any case"),
    ("SET `tx_read_only` = 0", T, None, "a backquoted tx_read_only"),
    ("SET `transaction_read_only` = 0", T, None, "a backquoted transaction_read_only"),
    ("SET `completion_type` = 1", T, None, "a backquoted completion_type"),
    ("SET `tx_isolation` = 'READ-UNCOMMITTED'", T, None, "a backquoted tx_isolation"),
    ("SET SESSION `autocommit` = 0", T, None, "SESSION and a backquoted name"),
    ("SET @@session.`autocommit` = 0", T, None, "@@session. and a backquoted name"),
    ("SET @@`autocommit` = 0", T, None, "@@ and a backquoted name"),
    ("SET @@`session`.autocommit = 0", T, None, "a backquoted scope"),
    ("SET @@local.`tx_read_only` = 0", T, None, "@@local. and a backquoted name"),
    ("SET a = 1, `autocommit` = 0", T, None, "the second of two assignments"),
    ("SET STATEMENT `autocommit` = 0 FOR UPDATE t SET a = 1", T, None, "SET STATEMENT's list"),
    ("SET @@GLOBAL.`max_connections` = 10", W, SERVER, "a global variable, quoted"),
    ("SET @@`global`.max_connections = 10", W, SERVER, "a quoted global scope"),
    ("CREATE TABLE t (a INT) ENGINE=`SPIDER`", D, SERVER, "a backquoted remote engine"),
    ("CREATE TABLE t (a INT) ENGINE='CONNECT'", D, SERVER, "an engine as a string"),
    ('CREATE TABLE t (a INT) ENGINE="FEDERATED"', D, SERVER, "an engine in double quotes"),
    ("CREATE TABLE t (a INT) ENGINE `spider`", D, SERVER, "quoted, lower case, without ="),
    ("ALTER TABLE t ENGINE = 'CONNECT'", D, SERVER, "ALTER to a quoted remote engine"),
    (
        'CREATE TABLE t (a INT) CONNECTION="mysql://u@h/db/t"',
        D,
        SERVER,
        "CONNECTION in double quotes",
    ),
]


@pytest.mark.parametrize(("sql", "risk", "target", "why"), QUOTED, ids=[r[-1] for r in QUOTED])
def test_a_quoted_identifier_is_looked_up_like_the_unquoted_one(
    sql: str, risk: Risk, target: TableRef | None, why: str
) -> None:
    classification = classify(sql)
    assert classification.risk is risk
    if target is not None:
        assert target in classification.statements[0].targets


def test_a_quoted_local_engine_is_no_remote_one() -> None:
    (statement,) = classify("CREATE TABLE t (a INT) ENGINE=`InnoDB`").statements
    assert statement.targets == (TableRef(None, "t"),)


# (sql, the other table it must name as a target, why)
OTHER_TABLES = [
    ("ALTER TABLE t RENAME TO other.u", TableRef("other", "u"), "RENAME TO moves the table"),
    ("ALTER TABLE t RENAME other.u", TableRef("other", "u"), "RENAME without TO"),
    ("ALTER TABLE t RENAME AS `other`.`u`", TableRef("other", "u"), "RENAME AS, quoted"),
    (
        "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE other.x",
        TableRef("other", "x"),
        "EXCHANGE PARTITION swaps rows with another table",
    ),
    (
        "ALTER TABLE t CONVERT PARTITION p TO TABLE other.x",
        TableRef("other", "x"),
        "CONVERT PARTITION moves a partition out into another schema",
    ),
    (
        "ALTER TABLE t CONVERT TABLE other.x TO PARTITION p VALUES LESS THAN (10)",
        TableRef("other", "x"),
        "CONVERT TABLE moves another schema's table in",
    ),
    (
        "ALTER TABLE t ADD COLUMN b INT, CONVERT PARTITION p TO TABLE other.x",
        TableRef("other", "x"),
        "the clause after another one",
    ),
    (
        "ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES other.p (id) ON DELETE CASCADE",
        TableRef("other", "p"),
        "a foreign key ties another schema's table to this one",
    ),
    (
        "CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES other.p (id))",
        TableRef("other", "p"),
        "CREATE TABLE with a foreign key into another schema",
    ),
    (
        "CREATE TABLE t (a INT REFERENCES other.p (id))",
        TableRef("other", "p"),
        "an inline REFERENCES",
    ),
    ("RENAME TABLE a TO other.b", TableRef("other", "b"), "RENAME TABLE into another schema"),
    ("RENAME TABLE other.a TO b", TableRef("other", "a"), "RENAME TABLE out of another schema"),
]


@pytest.mark.parametrize(("sql", "other", "why"), OTHER_TABLES, ids=[r[-1] for r in OTHER_TABLES])
def test_every_clause_that_names_another_table_makes_it_a_target(
    sql: str, other: TableRef, why: str
) -> None:
    (statement,) = classify(sql).statements
    assert other in statement.targets


def test_ordinary_alter_clauses_name_only_the_table() -> None:
    for sql in (
        "ALTER TABLE t ADD COLUMN b INT",
        "ALTER TABLE t RENAME COLUMN a TO b",
        "ALTER TABLE t RENAME INDEX i TO j",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
        "ALTER TABLE t DROP FOREIGN KEY fk",
    ):
        assert classify(sql).statements[0].targets == (TableRef(None, "t"),), sql


# Names are reported exactly as written: whether SHOP and shop are one schema is the
# server's lower_case_table_names to say, not the classifier's.
CASES = [
    ("UPDATE SHOP.Orders SET a = 1", TableRef("SHOP", "Orders"), "an UPDATE's target"),
    ("DROP TABLE Shop.T", TableRef("Shop", "T"), "a DROP's target"),
    ("CREATE DATABASE SHOP", TableRef("SHOP", ""), "a schema"),
    ("ALTER TABLE t RENAME TO OTHER.U", TableRef("OTHER", "U"), "a rename's new name"),
    ("INSERT INTO `Shop`.`Orders` VALUES (1)", TableRef("Shop", "Orders"), "quoted names"),
]


@pytest.mark.parametrize(("sql", "target", "why"), CASES, ids=[r[-1] for r in CASES])
def test_names_keep_their_case(sql: str, target: TableRef, why: str) -> None:
    assert target in classify(sql).statements[0].targets


def test_an_alias_that_differs_only_in_case_reports_both_readings() -> None:
    # With case-sensitive names, x.a is the table other.x; with folded names, the alias X.
    (statement,) = classify("UPDATE t AS X JOIN other.x SET x.a = 1").statements
    assert TableRef("other", "x") in statement.targets


def test_a_cte_name_in_another_case_is_still_reported_as_a_table() -> None:
    (statement,) = classify("WITH c AS (SELECT 1) UPDATE C JOIN c SET C.a = 1").statements
    assert TableRef(None, "C") in statement.targets


# (sql, why): a partition's own engine or connection keeps its rows elsewhere too.
PARTITION_ENGINES = [
    (
        "CREATE TABLE t (a INT) PARTITION BY HASH(a) (PARTITION p0 ENGINE=SPIDER)",
        "a Spider partition is another server's table",
    ),
    (
        "ALTER TABLE t REORGANIZE PARTITION p INTO (PARTITION p1 ENGINE = `CONNECT`)",
        "a quoted CONNECT engine in a reorganised partition",
    ),
    (
        "CREATE TABLE t (a INT) PARTITION BY LIST (a) "
        "(PARTITION p VALUES IN (1) CONNECTION='mysql://u@h/db/t')",
        "a partition's CONNECTION",
    ),
]


@pytest.mark.parametrize(
    ("sql", "why"), PARTITION_ENGINES, ids=[why for _, why in PARTITION_ENGINES]
)
def test_a_partition_kept_elsewhere_reaches_the_whole_server(sql: str, why: str) -> None:
    assert SERVER in classify(sql).statements[0].targets


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE t (id INT, type VARCHAR(10), engine VARCHAR(10), connection TEXT)",
        "CREATE TABLE t (a INT) PARTITION BY HASH(a) (PARTITION p0 ENGINE=InnoDB)",
        "CREATE TABLE t (SELECT * FROM information_schema.TABLES WHERE engine = 'x')",
    ],
)
def test_columns_named_like_table_options_are_no_options(sql: str) -> None:
    assert SERVER not in classify(sql).statements[0].targets


# (sql, why): what runs after a SET that changes how the server reads SQL was judged under
# the default reading, so it is refused.
REREADS = [
    ("SET sql_mode = 'ANSI_QUOTES'; SELECT \"a\" FROM t", "ANSI_QUOTES turns literals into names"),
    ("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'; SELECT 1", "backslashes stop escaping"),
    ("SET @@session.`sql_mode` = 'ORACLE'; SELECT 1", "quoted, and another grammar"),
    ("SET NAMES gbk; SELECT 1", "a multi-byte character set can swallow a backslash"),
    ("SET CHARACTER SET gbk; SELECT 1", "SET CHARACTER SET likewise"),
    ("SET character_set_client = 'gbk'; SELECT 1", "the client character set"),
    ("/*!40101 SET NAMES utf8 */; SELECT 1", "even in an executable comment"),
]


@pytest.mark.parametrize(("sql", "why"), REREADS, ids=[why for _, why in REREADS])
def test_statements_after_a_change_of_reading_reach_the_whole_server(sql: str, why: str) -> None:
    first, second = classify(sql).statements
    assert second.risk.rank >= W.rank
    assert SERVER in second.targets
    assert SERVER not in first.targets


def test_a_change_of_reading_as_the_last_statement_changes_nothing_judged() -> None:
    first, second = classify("SELECT 1; SET NAMES utf8mb4").statements
    assert first.risk is R and SERVER not in second.targets


def test_a_view_reports_the_stored_functions_it_calls_whenever_it_is_read() -> None:
    (statement,) = classify("CREATE VIEW v AS SELECT f(1), other.g(2) FROM t").statements
    assert set(statement.calls) == {TableRef(None, "f"), TableRef("other", "g")}
