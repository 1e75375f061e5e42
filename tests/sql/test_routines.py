"""A stored routine's body, as the server stores it, judged as if written out."""

from __future__ import annotations

import pytest

from bot.sql import classify_routine_body
from bot.sql.risk import Risk, TableRef

R, W, D, T = Risk.READ_ONLY, Risk.WRITE, Risk.DDL, Risk.TRANSACTION
SERVER = TableRef("*", "*")

CURSOR_LOOP = """BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE v INT;
  DECLARE cur CURSOR FOR SELECT id FROM orders WHERE status = 'new';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  OPEN cur;
  read_loop: LOOP
    FETCH cur INTO v;
    IF done THEN
      LEAVE read_loop;
    END IF;
    UPDATE orders SET status = 'seen' WHERE id = v;
  END LOOP;
  CLOSE cur;
END"""

# (body, its risk, a target it must have or None, a read it must have or None, why)
BODIES = [
    (CURSOR_LOOP, W, TableRef(None, "orders"), TableRef(None, "orders"), "a cursor loop"),
    ("UPDATE other_schema.t SET a = 1", W, TableRef("other_schema", "t"), None, "one statement"),
    ("BEGIN EXECUTE IMMEDIATE s; END", T, SERVER, SERVER, "dynamic SQL from a parameter"),
    (
        "BEGIN SET @s = 'DROP TABLE t'; PREPARE st FROM @s; EXECUTE st; END",
        T,
        SERVER,
        SERVER,
        "PREPARE and EXECUTE of a variable",
    ),
    (
        "BEGIN START TRANSACTION; UPDATE t SET a = 1; COMMIT; END",
        T,
        SERVER,
        None,
        "transaction control",
    ),
    ("BEGIN SET autocommit = 0; END", T, SERVER, None, "autocommit"),
    ("BEGIN SET `autocommit` = 0; END", T, SERVER, None, "a quoted autocommit"),
    ("BEGIN SET GLOBAL max_connections = 1; END", W, SERVER, None, "a global setting"),
    ("BEGIN GRANT ALL ON *.* TO u; END", D, SERVER, None, "a grant"),
    (
        "BEGIN IF (SELECT COUNT(*) FROM mysql.user) > 0 THEN DELETE FROM t; END IF; END",
        W,
        TableRef(None, "t"),
        TableRef("mysql", "user"),
        "an IF condition reads",
    ),
    (
        "BEGIN DECLARE v INT DEFAULT (SELECT MAX(id) FROM other.t); SELECT v; END",
        R,
        None,
        TableRef("other", "t"),
        "a DEFAULT reads",
    ),
    (
        "BEGIN WHILE (SELECT COUNT(*) FROM other.q) > 0 DO DELETE FROM other.q LIMIT 1; "
        "END WHILE; END",
        W,
        TableRef("other", "q"),
        TableRef("other", "q"),
        "a WHILE loop",
    ),
    (
        "BEGIN REPEAT SET @i = @i - 1; UNTIL @i = 0 END REPEAT; END",
        W,
        None,
        None,
        "a REPEAT loop",
    ),
    (
        "BEGIN CASE x WHEN 1 THEN UPDATE other.t SET a = 1; ELSE BEGIN END; END CASE; END",
        W,
        TableRef("other", "t"),
        None,
        "a CASE statement",
    ),
    (
        "BEGIN FOR r IN (SELECT a FROM other.x) DO INSERT INTO t VALUES (r.a); END FOR; END",
        W,
        TableRef(None, "t"),
        TableRef("other", "x"),
        "a FOR loop over a query",
    ),
    (
        "BEGIN DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END; "
        "INSERT INTO t VALUES (1); END",
        T,
        SERVER,
        None,
        "a handler's statement is judged",
    ),
    (
        "BEGIN DECLARE r ROW TYPE OF other.t; SELECT 1; END",
        R,
        None,
        TableRef("other", "t"),
        "an anchored type reads the table's definition",
    ),
    ("RETURN (SELECT name FROM other.c WHERE id = p)", R, None, TableRef("other", "c"), "RETURN"),
    ("BEGIN RETURN f(1); END", W, None, None, "a function calling a stored function"),
    ("lbl: BEGIN LEAVE lbl; END lbl", R, None, None, "labels"),
    ("BEGIN FROBNICATE; END", W, None, None, "an unknown statement is not read-only"),
]


@pytest.mark.parametrize(
    ("body", "risk", "target", "read", "why"), BODIES, ids=[row[-1] for row in BODIES]
)
def test_a_routine_body_is_judged_statement_by_statement(
    body: str, risk: Risk, target: TableRef | None, read: TableRef | None, why: str
) -> None:
    classification = classify_routine_body(body)
    assert classification.risk is risk
    targets = {t for statement in classification.statements for t in statement.targets}
    reads = {r for statement in classification.statements for r in statement.reads}
    if target is not None:
        assert target in targets
    if read is not None:
        assert read in reads


def test_every_statement_points_at_its_text_in_the_body() -> None:
    classification = classify_routine_body(CURSOR_LOOP)
    assert len(classification.statements) >= 5
    for statement in classification.statements:
        assert CURSOR_LOOP[statement.start : statement.end] == statement.text


def test_routines_it_calls_are_reported_for_the_guard_to_judge_in_turn() -> None:
    classification = classify_routine_body("BEGIN CALL other.q(1); SET @a = f(2); END")
    calls = {call for statement in classification.statements for call in statement.calls}
    assert calls == {TableRef("other", "q"), TableRef(None, "f")}


def test_an_unknown_statement_in_a_body_reaches_the_whole_server() -> None:
    classification = classify_routine_body("BEGIN FROBNICATE; END")
    assert SERVER in classification.statements[0].targets


def test_an_empty_body_does_nothing() -> None:
    classification = classify_routine_body("BEGIN END")
    assert classification.risk is R
    assert classification.statements == ()


def test_a_handler_without_for_is_unreadable_and_unbounded() -> None:
    classification = classify_routine_body("BEGIN DECLARE CONTINUE HANDLER SET x = 1; END")
    assert any(SERVER in statement.targets for statement in classification.statements)
