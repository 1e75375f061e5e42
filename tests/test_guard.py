"""The guard table, one row per case with its reason."""

from __future__ import annotations

import pytest

from bot import guard
from bot.config import DatabaseConfig
from bot.db.reach import ForeignKey, Routine, ServerReach, Trigger, View
from bot.guard import Decision, NeedsApproval, Refused, Run
from bot.sql.risk import Classification, Risk, Statement, TableRef, classify
from bot.sql.routines import classify_routine_body


def classification(
    risk: Risk,
    *targets: TableRef,
    statements: int = 1,
    kind: str = "X",
    reads: tuple[TableRef, ...] = (),
) -> Classification:
    made = tuple(
        Statement(
            text="X",
            start=0,
            end=1,
            risk=risk,
            kind=kind,
            reasons=(f"{risk} reason",),
            targets=targets,
            reads=reads,
        )
        for _ in range(statements)
    )
    return Classification(sql="X", risk=risk, statements=made, reasons=(f"{risk} reason",))


def database(environment: str, *, replica: bool = False, schema: str = "shop") -> DatabaseConfig:
    return DatabaseConfig(
        name=f"shop-{environment}",
        url=f"mysql://agent@db:3306/{schema}",
        environment=environment,
        read_url=f"mysql://reader@replica/{schema}" if replica else None,
        read_schemas=["shop_archive"],
    )


def server(
    schema: str | None = "shop",
    *,
    folds: int = 0,
    routines: tuple[Routine, ...] = (),
    triggers: tuple[Trigger, ...] = (),
    keys: tuple[ForeignKey, ...] = (),
) -> ServerReach:
    return ServerReach(schema, folds, routines, triggers, keys, programs_read=True)


def judge(
    sql: str,
    environment: str = "staging",
    *,
    granted: bool = True,
    reach: ServerReach | None = None,
) -> Decision:
    return guard.judge(
        classify(sql), database(environment), granted=granted, reach=reach or server()
    )


R, W, D, T = Risk.READ_ONLY, Risk.WRITE, Risk.DDL, Risk.TRANSACTION
OWN, OWN_UPPER = TableRef("shop", "orders"), TableRef("SHOP", "orders")
BARE, FOREIGN = TableRef(None, "orders"), TableRef("billing", "invoices")
SERVER = TableRef("*", "*")

GUARD_TABLE = [
    # (risk, targets, environment, replica, granted, expected, reason)
    (R, (), "production", False, False, Run(True, False), "reads run on production, read-only"),
    (R, (), "production", True, False, Run(True, True), "production reads go to the replica"),
    (R, (), "staging", False, False, Run(True, False), "reads run at once on staging"),
    (R, (), "staging", True, False, Run(True, True), "staging reads use a configured replica"),
    (
        R,
        (),
        "development",
        False,
        True,
        Run(True, False),
        "a grant doesn't turn a read into a write",
    ),
    (W, (BARE,), "production", False, False, Refused, "production is never written"),
    (W, (BARE,), "production", False, True, Refused, "not even with a grant"),
    (D, (BARE,), "production", False, True, Refused, "no DDL on production, grant or not"),
    (W, (BARE,), "staging", False, False, NeedsApproval, "a staging write needs a click"),
    (D, (BARE,), "development", False, False, NeedsApproval, "dev DDL needs a click"),
    (W, (BARE,), "staging", False, True, Run(False, False), "a matching grant lets it run"),
    (D, (BARE,), "development", True, True, Run(False, False), "writes never use the replica"),
    (W, (OWN,), "staging", False, True, Run(False, False), "the database's own schema is fine"),
    (W, (OWN_UPPER,), "staging", False, True, Refused, "SHOP is not shop on a case-keeping server"),
    (W, (FOREIGN,), "staging", False, True, Refused, "another schema is refused even granted"),
    (W, (FOREIGN,), "staging", False, False, Refused, "another schema never reaches approval"),
    (D, (OWN, FOREIGN), "development", False, True, Refused, "one foreign target is enough"),
    (D, (SERVER,), "development", False, True, Refused, "users and privileges are server-wide"),
    (T, (), "staging", False, False, Refused, "transaction control is refused on staging"),
    (T, (), "development", False, True, Refused, "and with a grant"),
    (T, (), "production", False, False, Refused, "and on production"),
]


@pytest.mark.parametrize(
    ("risk", "targets", "environment", "replica", "granted", "expected", "reason"),
    GUARD_TABLE,
    ids=[row[-1] for row in GUARD_TABLE],
)
def test_guard_table(risk, targets, environment, replica, granted, expected, reason):
    decision = guard.judge(
        classification(risk, *targets),
        database(environment, replica=replica),
        granted=granted,
        reach=server(),
    )
    if isinstance(expected, type):
        assert isinstance(decision, expected), reason
    else:
        assert decision == expected, reason


def test_a_production_write_tells_the_model_what_to_do_next():
    decision = guard.judge(
        classification(W, BARE), database("production"), granted=False, reach=server()
    )
    assert isinstance(decision, Refused)
    assert decision.reason.startswith("Blocked: writes on production")
    assert "show the SQL to the user" in decision.reason


def test_refusals_start_with_blocked():
    for risk, env in ((T, "staging"), (W, "production")):
        decision = guard.judge(
            classification(risk, BARE), database(env), granted=False, reach=server()
        )
        assert isinstance(decision, Refused) and decision.reason.startswith("Blocked: ")


def test_a_foreign_schema_refusal_names_the_table():
    decision = guard.judge(
        classification(W, FOREIGN), database("staging"), granted=True, reach=server()
    )
    assert isinstance(decision, Refused) and "billing.invoices" in decision.reason


def test_nothing_to_run_is_refused():
    empty = Classification(sql="", risk=Risk.WRITE, statements=(), reasons=("no statement",))
    assert isinstance(
        guard.judge(empty, database("staging"), granted=True, reach=server()), Refused
    )


def test_a_qualified_write_without_a_schema_in_the_url_is_refused():
    no_schema = DatabaseConfig(name="x", url="mysql://u@h", environment="staging")
    decision = guard.judge(classification(W, OWN), no_schema, granted=True, reach=server(None))
    assert isinstance(decision, Refused)


def test_a_server_wide_statement_says_so():
    decision = guard.judge(
        classification(D, SERVER), database("staging"), granted=True, reach=server()
    )
    assert isinstance(decision, Refused) and "beyond this database" in decision.reason


# --- what a statement reaches on the server ------------------------------------------------


def routine(name: str, body: str | None, schema: str = "shop") -> Routine:
    return Routine(schema, name, "PROCEDURE", body, classify_routine_body(body) if body else None)


def trigger(table: str, event: str, body: str, *, name: str = "trg") -> Trigger:
    return Trigger("shop", name, "shop", table, event, "AFTER", body, classify_routine_body(body))


def key(parent: str, child: str, *, on_delete: str = "RESTRICT", on_update: str = "RESTRICT"):
    child_schema, child_table = child.split(".")
    return ForeignKey(
        f"fk_{child_table}",
        child_schema,
        child_table,
        "ref_id",
        "shop",
        parent,
        on_update,
        on_delete,
    )


DYNAMIC = routine("p", "EXECUTE IMMEDIATE s")
WRITES_OTHER = routine("p", "UPDATE other.t SET a = 1")
WRITES_OWN = routine("p", "UPDATE t SET a = 1")
LOGS_OTHER = trigger("t", "UPDATE", "INSERT INTO other.log VALUES (NEW.id)")
LOGS_OWN = trigger("t", "UPDATE", "INSERT INTO log VALUES (NEW.id)")

REACH_TABLE = [
    # (sql, server, expected, words in the reason, why)
    (
        "CALL p('UPDATE other.t SET a = 1')",
        server(routines=(DYNAMIC,)),
        Refused,
        "dynamic SQL",
        "a procedure running dynamic SQL reaches the whole server",
    ),
    ("CALL p()", server(routines=(WRITES_OTHER,)), Refused, "other.t", "its body's target counts"),
    ("CALL p()", server(routines=(WRITES_OWN,)), Run, "", "a body that stays home runs"),
    (
        "CALL P()",
        server(routines=(WRITES_OTHER,)),
        Refused,
        "other.t",
        "routine names are caseless",
    ),
    (
        "CALL p()",
        server(routines=(routine("p", None),)),
        Refused,
        "cannot be read",
        "a body the account cannot read reaches the whole server",
    ),
    ("CALL missing()", server(), Refused, "cannot be read", "an unknown routine is not guessed"),
    (
        "CALL p()",
        server(routines=(routine("p", "CALL q()"), routine("q", "DELETE FROM other.x"))),
        Refused,
        "procedure shop.p → procedure shop.q",
        "nested calls are followed",
    ),
    ("CALL p()", server(routines=(routine("p", "CALL p()"),)), Run, "", "recursion ends"),
    (
        "CALL p()",
        server(routines=(routine("p", "BEGIN UPDATE t SET a = 1; DELETE FROM other.x; END"),)),
        Refused,
        "other.x",
        "a compound body is judged statement by statement",
    ),
    (
        "CALL p()",
        server(routines=(routine("p", "BEGIN IF 1 THEN UPDATE t SET a = 1; END IF; END"),)),
        Run,
        "",
        "and one that stays home runs",
    ),
    (
        "CALL p()",
        server(routines=(routine("p", "BEGIN PREPARE s FROM @q; EXECUTE s; END"),)),
        Refused,
        "dynamic SQL",
        "dynamic SQL inside a block reaches the whole server",
    ),
    (
        "UPDATE t SET a = f(1)",
        server(
            routines=(
                Routine(
                    "shop",
                    "f",
                    "FUNCTION",
                    "RETURN (SELECT COUNT(*) FROM other.x)",
                    classify_routine_body("RETURN (SELECT COUNT(*) FROM other.x)"),
                ),
            )
        ),
        Refused,
        "other.x",
        "a stored function's body reads count too",
    ),
    ("CALL p()", server(routines=(routine("p", "COMMIT"),)), Refused, "transaction", "COMMIT"),
    (
        "CALL p()",
        server(routines=(routine("p", "INSERT INTO t SELECT user FROM mysql.user"),)),
        Refused,
        "reads mysql.user (through procedure shop.p)",
        "a body's reads are confined like the statement's",
    ),
    (
        "UPDATE t SET a = 1",
        server(triggers=(trigger("t", "UPDATE", "INSERT INTO log SELECT id FROM other.x"),)),
        Refused,
        "reads other.x",
        "so are a trigger's",
    ),
    (
        "CALL p()",
        server(routines=(routine("p", "SET GLOBAL max_connections = 1"),)),
        Refused,
        "beyond this database",
        "a body changing server settings is server-wide",
    ),
    (
        "CALL SHOP.p()",
        server(routines=(WRITES_OWN,)),
        Refused,
        "SHOP.p",
        "SHOP is another schema when the server keeps case",
    ),
    (
        "CALL SHOP.p()",
        server(folds=1, routines=(WRITES_OWN,)),
        Run,
        "",
        "and the same schema when it folds case",
    ),
    (
        "UPDATE t SET a = 1",
        server(triggers=(LOGS_OTHER,)),
        Refused,
        "trigger shop.trg (AFTER UPDATE on shop.t)",
        "a trigger writing another schema makes the write refused",
    ),
    (
        "INSERT INTO t VALUES (1)",
        server(triggers=(trigger("t", "DELETE", "DELETE FROM other.x"),)),
        Run,
        "",
        "a DELETE trigger does not fire on INSERT",
    ),
    ("UPDATE t SET a = 1", server(triggers=(LOGS_OWN,)), Run, "", "an in-schema trigger is fine"),
    (
        "UPDATE t SET a = 1",
        server(triggers=(trigger("T", "UPDATE", "DELETE FROM other.x"),)),
        Run,
        "",
        "a trigger on T is not on t when the server keeps case",
    ),
    (
        "UPDATE t SET a = 1",
        server(folds=1, triggers=(trigger("T", "UPDATE", "DELETE FROM other.x"),)),
        Refused,
        "other.x",
        "and is when it folds case",
    ),
    (
        "UPDATE t SET a = 1",
        server(
            triggers=(
                trigger("t", "UPDATE", "INSERT INTO log VALUES (1)"),
                trigger("log", "INSERT", "DELETE FROM other.x", name="trg2"),
            )
        ),
        Refused,
        "other.x",
        "a trigger's writes fire triggers in turn",
    ),
    (
        "UPDATE t SET a = 1",
        server(triggers=(trigger("t", "UPDATE", "CALL p()"),), routines=(WRITES_OTHER,)),
        Refused,
        "other.t",
        "a trigger calling a procedure is followed into it",
    ),
    (
        "DELETE FROM customers WHERE id = 1",
        server(keys=(key("customers", "other.orders", on_delete="CASCADE"),)),
        Refused,
        "foreign key fk_orders (ON DELETE CASCADE)",
        "a cascade into another schema makes the write refused",
    ),
    (
        "DELETE FROM customers WHERE id = 1",
        server(keys=(key("customers", "other.orders"),)),
        Run,
        "",
        "RESTRICT writes nothing",
    ),
    (
        "UPDATE customers SET id = 2",
        server(keys=(key("customers", "other.orders", on_update="SET NULL"),)),
        Refused,
        "ON UPDATE SET NULL",
        "SET NULL writes the child",
    ),
    (
        "DELETE FROM customers",
        server(keys=(key("customers", "other.orders", on_update="CASCADE"),)),
        Run,
        "",
        "an ON UPDATE rule does not act on DELETE",
    ),
    (
        "DELETE FROM customers",
        server(
            keys=(
                key("customers", "shop.orders", on_delete="CASCADE"),
                key("orders", "other.items", on_delete="CASCADE"),
            )
        ),
        Refused,
        "other.items",
        "cascades are followed transitively",
    ),
    (
        "DELETE FROM customers",
        server(keys=(key("customers", "shop.orders", on_delete="CASCADE"),)),
        Run,
        "",
        "an in-schema cascade is shown, not refused",
    ),
    (
        "UPDATE t SET a = 1; CALL p(); INSERT INTO t VALUES (1)",
        server(routines=(routine("p", "CREATE TABLE made (id INT)"),)),
        Refused,
        "commit implicitly",
        "a procedure running DDL commits the changes before it in the call",
    ),
    (
        "CALL p()",
        server(routines=(routine("p", "ALTER TABLE t ADD COLUMN b INT"),)),
        Refused,
        "commit implicitly",
        "alone too: the bounded transaction could not roll its DDL back",
    ),
    (
        "UPDATE t SET a = 1 WHERE id = 1 /*! OR 1 = 1 */",
        server(),
        Refused,
        "executable comment",
        "the card counts rows without the comment; the server runs it",
    ),
    (
        "DELETE FROM t /*M!999999 ; DROP TABLE t */",
        server(),
        Refused,
        "executable comment",
        "a comment the server skips makes a DELETE DDL, which runs unbounded",
    ),
    (
        "CREATE TABLE t (id INT) /*!50100 PARTITION BY HASH (id) */",
        server(),
        Run,
        "",
        "DDL as SHOW CREATE TABLE prints it keeps its comment: DDL runs unbounded anyway",
    ),
    (
        "SET sql_mode = 'NO_BACKSLASH_ESCAPES'; UPDATE t SET a = 'x\\' WHERE id = 1",
        server(),
        Refused,
        "SQL_MODE",
        "the UPDATE after it would be read by other rules than the classifier's",
    ),
    (
        "SET NAMES sjis; UPDATE t SET a = 1",
        server(),
        Refused,
        "NAMES",
        "a multi-byte client character set can swallow a backslash",
    ),
    (
        "SET CHARACTER SET big5; UPDATE t SET a = 1",
        server(),
        Refused,
        "CHARACTER SET",
        "SET CHARACTER SET sets the client character set too",
    ),
    (
        "SET foreign_key_checks = 0; DELETE FROM customers",
        server(keys=(key("customers", "shop.orders", on_delete="CASCADE"),)),
        Refused,
        "FOREIGN_KEY_CHECKS",
        "the card's cascade would not fire, and other schemas' rows would dangle",
    ),
    (
        "EXECUTE IMMEDIATE 'DELETE FROM t /*M!999999 ; DROP TABLE t */'",
        server(),
        Refused,
        "executable comment",
        "the comment inside dynamic SQL makes its DELETE DDL, which runs unbounded",
    ),
    (
        "EXECUTE IMMEDIATE 'SET sql_mode = ''ANSI_QUOTES'''; UPDATE t SET a = 1",
        server(),
        Refused,
        "SQL_MODE",
        "a setting changed through dynamic SQL changes how the next statement is read",
    ),
    (
        "CALL p(); DELETE FROM customers",
        server(
            routines=(routine("p", "SET foreign_key_checks = 0"),),
            keys=(key("customers", "shop.orders", on_delete="CASCADE"),),
        ),
        Refused,
        "FOREIGN_KEY_CHECKS",
        "a procedure's SET foreign_key_checks outlives the CALL: the cascade would not fire",
    ),
    (
        "SET STATEMENT foreign_key_checks = 0 FOR DELETE FROM customers",
        server(keys=(key("customers", "shop.orders", on_delete="CASCADE"),)),
        Refused,
        "FOREIGN_KEY_CHECKS",
        "SET STATEMENT switches the checks off for its own DELETE: no cascade fires",
    ),
    (
        "SELECT * FROM shop\u00a0.orders",
        server(),
        Refused,
        "U+00A0",
        "a no-break space is part of the name on the server: another schema, said plainly",
    ),
    (
        "UPDATE t SET a = 'x\u00a0y' WHERE id = 1",
        server(),
        Run,
        "",
        "inside a literal it is only data",
    ),
    (
        "UPDATE t SET a = 1; SET sql_mode = ''",
        server(),
        Run,
        "",
        "a SET last changes how nothing after it is read",
    ),
    (
        "SET STATEMENT sql_mode = '' FOR UPDATE t SET a = 1",
        server(),
        Run,
        "",
        "SET STATEMENT's statement is read before its setting applies",
    ),
    # Settings that change what is logged or replicated: a change hiding itself is refused,
    # granted or not, named with what the setting does.
    *[
        (sql, server(), Refused, words, why)
        for sql, words, why in [
            ("SET SESSION sql_log_bin = 0; UPDATE t SET a = 1", "sql_log_bin", "binlog off"),
            ("SET sql_log_bin = 0", "out of the binary log", "on its own: the session keeps it"),
            ("SET STATEMENT sql_log_bin = 0 FOR UPDATE t SET a = 1", "sql_log_bin", "for one"),
            ("SET @@session.sql_log_bin = OFF; DELETE FROM t", "sql_log_bin", "@@session."),
            ("SET @@`session`.`sql_log_bin` = 0; DELETE FROM t", "sql_log_bin", "backquoted"),
            ("SET `SQL_LOG_BIN` = 0; DELETE FROM t", "sql_log_bin", "quoted, upper case"),
            ("SET LOCAL skip_replication = 1; DELETE FROM t", "replicas to skip", "skipped"),
            ("SET @@wsrep_on = OFF; DELETE FROM t", "Galera", "kept from the cluster"),
            ("SET wsrep_osu_method = 'RSU'; ALTER TABLE t ADD c INT", "this node only", "RSU"),
            ("SET gtid_seq_no = 100; DELETE FROM t", "already applied", "a GTID reused"),
            ("SET gtid_domain_id = 9; DELETE FROM t", "replication domain", "another domain"),
            ("SET server_id = 2; DELETE FROM t", "another server's", "another server's event"),
            ("SET pseudo_thread_id = 7; DELETE FROM t", "another connection", "another's id"),
            ("SET binlog_format = 'STATEMENT'; DELETE FROM t", "binlog_format", "CDC's view"),
            ("SET binlog_row_image = 'MINIMAL'; DELETE FROM t", "columns", "fewer columns"),
            ("SET binlog_annotate_row_events = 0; DELETE FROM t", "statement's text", "no text"),
            ("SET sql_log_off = 1; DELETE FROM t", "general query log", "general log off"),
            ("SET long_query_time = 1000; DELETE FROM t", "slow query log", "slow log blind"),
            (
                "SET STATEMENT max_statement_time = 5, server_id = 3 FOR DELETE FROM t",
                "server_id",
                "one of several",
            ),
            ("EXECUTE IMMEDIATE 'SET sql_log_bin = 0'; DELETE FROM t", "sql_log_bin", "dynamic"),
            ("/*!SET sql_log_bin = 0*/; DELETE FROM t", "executable comment", "in a comment"),
        ]
    ],
    (
        "CALL p(); DELETE FROM t",
        server(routines=(routine("p", "SET sql_log_bin = 0"),)),
        Refused,
        "",
        "a procedure's SET sql_log_bin outlives the CALL: it reaches the whole server",
    ),
    (
        "SET STATEMENT max_statement_time = 5 FOR UPDATE t SET a = 1",
        server(),
        Run,
        "",
        "a setting that logs and replicates as usual is no alarm",
    ),
    # Every name a function takes is a read target.
    ("SELECT LASTVAL(billing.s)", server(), Refused, "billing.s", "another schema's sequence"),
    ("SELECT PREVIOUS VALUE FOR mysql.user", server(), Refused, "mysql.user", "the accounts"),
    ("SELECT LASTVAL(SHOP.s)", server(), Refused, "SHOP.s", "the other-case schema"),
    ("SELECT LASTVAL(SHOP.s)", server(folds=1), Run, "", "one schema when the server folds"),
    ("SELECT billing.s.currval", server(), Refused, "billing.s", "the .currval spelling"),
    ("SELECT LASTVAL(s), PREVIOUS VALUE FOR shop.s", server(), Run, "", "the own sequences"),
    ("SELECT IS_USED_LOCK('app_lock')", server(), Refused, "beyond", "who holds a named lock"),
    ("SELECT `is_free_lock`('app_lock')", server(), Refused, "beyond", "quoted, the same"),
    ("SELECT GET_LOCK('app_lock', 0)", server(), Refused, "beyond", "taking one"),
    ("DO RELEASE_LOCK('app_lock')", server(), Refused, "beyond", "releasing another's"),
    # Other sessions' statements and plans.
    ("EXPLAIN FOR CONNECTION 7", server(), Refused, "another connection", "its plan"),
    ("EXPLAIN FORMAT=JSON FOR CONNECTION 7", server(), Refused, "another connection", "JSON"),
    ("SHOW FULL PROCESSLIST", server(), Refused, "PROCESSLIST", "every connection's SQL"),
]


@pytest.mark.parametrize(
    ("sql", "reach", "expected", "words", "why"), REACH_TABLE, ids=[row[-1] for row in REACH_TABLE]
)
def test_what_a_statement_reaches(sql, reach, expected, words, why):
    decision = judge(sql, reach=reach)
    assert isinstance(decision, expected), f"{why}: {decision}"
    if words:
        assert isinstance(decision, Refused) and words in decision.reason, why


ARCHIVE, MYSQL_USER = TableRef("shop_archive", "orders"), TableRef("mysql", "user")
READS_TABLE = [
    # (risk, reads, folds, expected, why)
    (R, (MYSQL_USER,), 0, Refused, "mysql.user is outside the database"),
    (R, (TableRef(None, "orders"),), 0, Run, "unqualified reads are the own schema"),
    (R, (ARCHIVE,), 0, Run, "read_schemas are readable"),
    (
        R,
        (TableRef("information_schema", "TABLES"),),
        0,
        Refused,
        "a catalog read its text does not write out cannot be confined",
    ),
    (R, (TableRef("SHOP", "orders"),), 0, Refused, "SHOP is not shop when case is kept"),
    (R, (TableRef("SHOP", "orders"),), 1, Run, "SHOP is shop when case folds"),
    (R, (TableRef("performance_schema", "threads"),), 0, Refused, "nor other system schemas"),
    (W, (MYSQL_USER,), 0, Refused, "a write's sources are confined too"),
    (W, (ARCHIVE,), 0, NeedsApproval, "a write may read read_schemas"),
]


@pytest.mark.parametrize(
    ("risk", "reads", "folds", "expected", "why"), READS_TABLE, ids=[row[-1] for row in READS_TABLE]
)
def test_reads_are_confined(risk, reads, folds, expected, why):
    targets = (BARE,) if risk is W else ()
    made = classification(risk, *targets, reads=reads)
    decision = guard.judge(made, database("staging"), granted=False, reach=server(folds=folds))
    assert isinstance(decision, expected), f"{why}: {decision}"


CATALOG_TABLE = [
    # (sql, risk of the statement, confined: what runs contains this; or the refusal's words)
    (
        "SELECT TABLE_NAME FROM information_schema.TABLES",
        "FROM (SELECT * FROM information_schema.`TABLES` WHERE BINARY TABLE_SCHEMA IN"
        " (X'73686f70', X'73686f705f61726368697665') LIMIT 18446744073709551615) AS `TABLES`",
        "a query of the catalog runs through a filter on the own schema",
    ),
    (
        "SELECT TABLE_NAME FROM INFORMATION_SCHEMA.tables",
        "X'73686f705f61726368697665') LIMIT 18446744073709551615) AS `tables`",
        "information_schema in any case, the view keeping its name as written",
    ),
    (
        "SELECT * FROM information_schema.ENGINES",
        "SELECT * FROM information_schema.ENGINES",
        "a view about no schema runs as written",
    ),
    ("SHOW DATABASES", "information_schema.SCHEMATA", "SHOW DATABASES lists every schema"),
    (
        "SELECT * FROM information_schema.USER_PRIVILEGES",
        "privileges held on the whole server",
        "a view about the server's accounts is refused",
    ),
    (
        "INSERT INTO t SELECT TABLE_NAME FROM information_schema.TABLES",
        "a change cannot read",
        "a change runs as approved, so it cannot be confined: refused",
    ),
    (
        "INSERT INTO t SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES",
        "",
        "a change may read a view about no schema",
    ),
]


@pytest.mark.parametrize(("sql", "words", "why"), CATALOG_TABLE, ids=[r[-1] for r in CATALOG_TABLE])
def test_catalog_reads_are_confined_to_the_own_schema(sql, words, why):
    decision = guard.judge(classify(sql), database("staging"), granted=True, reach=server())
    if isinstance(decision, Refused):
        assert words in decision.reason, why
        return
    assert isinstance(decision, Run), why
    texts = decision.texts or (sql,)
    assert words in texts[0], why


def test_a_catalog_view_read_through_a_view_is_refused():
    over_catalog = view("v", TableRef("information_schema", "COLUMNS"))
    decision = guard.judge(
        classification(R, reads=(TableRef(None, "v"),)),
        database("staging"),
        granted=False,
        reach=ServerReach("shop", 0, programs_read=True, views=(over_catalog,)),
    )
    assert isinstance(decision, Refused) and "through view" in decision.reason


def test_a_refused_read_says_plainly_what_it_reads():
    made = classification(R, reads=(MYSQL_USER,))
    decision = guard.judge(made, database("production"), granted=False, reach=server())
    assert isinstance(decision, Refused)
    assert decision.reason.startswith("Blocked: the statement reads mysql.user, outside")


def test_a_write_is_refused_when_the_server_could_not_say_what_it_reaches():
    unread = ServerReach("shop", 0)
    decision = guard.judge(classification(W, BARE), database("staging"), granted=True, reach=unread)
    assert isinstance(decision, Refused) and "could not be read" in decision.reason
    read = guard.judge(classification(R), database("staging"), granted=False, reach=unread)
    assert read == Run(read_only=True)


def test_a_write_is_refused_when_the_account_may_not_see_the_triggers():
    hidden = ServerReach("shop", 0, programs_read=True, triggers_visible=False)
    decision = guard.judge(classification(W, BARE), database("staging"), granted=True, reach=hidden)
    assert isinstance(decision, Refused) and "TRIGGER privilege" in decision.reason
    ddl = guard.judge(classification(D, BARE), database("staging"), granted=True, reach=hidden)
    assert ddl == Run(read_only=False)  # DDL fires no trigger


def test_a_locking_read_fires_no_trigger():
    locking = classify("SELECT * FROM t WHERE id = 1 FOR UPDATE")
    reach = server(triggers=(trigger("t", "UPDATE", "DELETE FROM other.x"),))
    decision = guard.judge(locking, database("staging"), granted=True, reach=reach)
    assert decision == Run(read_only=False)


def view(name: str, *reads: TableRef) -> View:
    """A view whose definition reads `reads` (as the classifier would report them)."""
    return View("shop", name, "SELECT …", classification(R, reads=reads))


OVER_OTHER = view("v", TableRef("other", "t"))
OVER_OWN = view("v", TableRef(None, "t"))
VIEWS_TABLE = [
    # (risk, written, read, views, triggers, expected, words, why)
    (
        W,
        TableRef(None, "v"),
        None,
        (OVER_OTHER,),
        (),
        Refused,
        "view shop.v",
        "writing through a view writes its table",
    ),
    (
        W,
        TableRef(None, "v"),
        None,
        (OVER_OWN,),
        (),
        NeedsApproval,
        "",
        "a view over the own schema is fine",
    ),
    (
        W,
        TableRef(None, "v"),
        None,
        (OVER_OWN,),
        (trigger("t", "UPDATE", "DELETE FROM other.x"),),
        Refused,
        "other.x",
        "the base table's triggers fire",
    ),
    (
        R,
        None,
        TableRef(None, "v"),
        (OVER_OTHER,),
        (),
        Refused,
        "other.t (through view shop.v)",
        "reading a view reads its tables",
    ),
    (R, None, TableRef(None, "v"), (OVER_OWN,), (), Run, "", "an own view reads the own schema"),
    (
        R,
        None,
        TableRef(None, "v"),
        (view("v", TableRef(None, "w")), view("w", MYSQL_USER)),
        (),
        Refused,
        "mysql.user",
        "views over views are followed",
    ),
    (
        R,
        None,
        TableRef(None, "v"),
        (View("shop", "v", None, None),),
        (),
        Refused,
        "definition cannot be read",
        "a view the account may not see into is not guessed",
    ),
]


@pytest.mark.parametrize(
    ("risk", "written", "read", "views", "triggers", "expected", "words", "why"),
    VIEWS_TABLE,
    ids=[row[-1] for row in VIEWS_TABLE],
)
def test_what_a_view_reaches(risk, written, read, views, triggers, expected, words, why):
    made = classification(
        risk, *((written,) if written else ()), kind="UPDATE", reads=(read,) if read else ()
    )
    reach = ServerReach("shop", 0, triggers=triggers, programs_read=True, views=views)
    decision = guard.judge(made, database("staging"), granted=False, reach=reach)
    assert isinstance(decision, expected), f"{why}: {decision}"
    if words:
        assert isinstance(decision, Refused) and words in decision.reason, why


def test_a_write_is_refused_when_the_account_may_not_see_every_foreign_key():
    hidden = ServerReach("shop", 0, programs_read=True, keys_visible=False)
    decision = judge("DELETE FROM customers WHERE id = 1", reach=hidden)
    assert isinstance(decision, Refused) and "REFERENCES" in decision.reason
    assert isinstance(judge("SELECT * FROM customers", reach=hidden), Run)


HIDDEN_TRIGGERS = ServerReach("shop", 0, programs_read=True, triggers_visible=False)
HIDDEN_KEYS = ServerReach("shop", 0, programs_read=True, keys_visible=False)
SEVERAL_STATEMENTS = [
    # (sql, what the account cannot see, refused, why) — a rule over several statements is
    # true when ANY statement meets it, wherever in the script the write stands
    ("SELECT 1; UPDATE t SET a = 1 WHERE id = 2", HIDDEN_TRIGGERS, True, "the write is last"),
    ("UPDATE t SET a = 1 WHERE id = 2; SELECT 1", HIDDEN_TRIGGERS, True, "the write is first"),
    ("SELECT 1; DELETE FROM t; SELECT 2", HIDDEN_TRIGGERS, True, "the write is in the middle"),
    ("SELECT 1; UPDATE t SET a = 1 WHERE id = 2", HIDDEN_KEYS, True, "hidden keys, write last"),
    ("UPDATE t SET a = 1 WHERE id = 2; SELECT 1", HIDDEN_KEYS, True, "hidden keys, write first"),
    ("SELECT 1; SELECT 2", HIDDEN_TRIGGERS, False, "reads only: nothing fires"),
    ("SELECT 1; SELECT 2", HIDDEN_KEYS, False, "reads only: nothing cascades"),
]


@pytest.mark.parametrize(
    ("sql", "reach", "refused", "why"), SEVERAL_STATEMENTS, ids=[c[-1] for c in SEVERAL_STATEMENTS]
)
def test_hidden_triggers_or_keys_refuse_a_script_when_any_statement_writes(
    sql: str, reach: ServerReach, refused: bool, why: str
) -> None:
    decision = judge(sql, reach=reach)
    assert isinstance(decision, Refused) is refused, (why, decision)
    if refused:
        assert isinstance(decision, Refused)
        assert "TRIGGER privilege" in decision.reason or "REFERENCES" in decision.reason, why
