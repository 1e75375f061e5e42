"""The guard table, one row per case with its reason."""

from __future__ import annotations

import pytest

from bot.config import DatabaseConfig
from bot.guard import NeedsApproval, Refused, Run, decide
from bot.sql.risk import Classification, Risk, Statement, TableRef


def classification(risk: Risk, *targets: TableRef, statements: int = 1) -> Classification:
    made = tuple(
        Statement(
            text="X",
            start=0,
            end=1,
            risk=risk,
            kind="X",
            reasons=(f"{risk} reason",),
            targets=targets,
        )
        for _ in range(statements)
    )
    return Classification(sql="X", risk=risk, statements=made, reasons=(f"{risk} reason",))


def database(environment: str, *, replica: bool = False) -> DatabaseConfig:
    return DatabaseConfig(
        name=f"shop-{environment}",
        url="mysql://agent@db:3306/shop",
        environment=environment,
        read_url="mysql://reader@replica/shop" if replica else None,
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
    (W, (OWN_UPPER,), "staging", False, True, Run(False, False), "schema names compare caselessly"),
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
    decision = decide(
        classification(risk, *targets), database(environment, replica=replica), granted=granted
    )
    if isinstance(expected, type):
        assert isinstance(decision, expected), reason
    else:
        assert decision == expected, reason


def test_a_production_write_tells_the_model_what_to_do_next():
    decision = decide(classification(W, BARE), database("production"), granted=False)
    assert isinstance(decision, Refused)
    assert decision.reason.startswith("Blocked: writes on production")
    assert "show the SQL to the user" in decision.reason


def test_refusals_start_with_blocked():
    for risk, env in ((T, "staging"), (W, "production")):
        decision = decide(classification(risk, BARE), database(env), granted=False)
        assert isinstance(decision, Refused) and decision.reason.startswith("Blocked: ")


def test_a_foreign_schema_refusal_names_the_table():
    decision = decide(classification(W, FOREIGN), database("staging"), granted=True)
    assert isinstance(decision, Refused) and "billing.invoices" in decision.reason


def test_nothing_to_run_is_refused():
    empty = Classification(sql="", risk=Risk.WRITE, statements=(), reasons=("no statement",))
    assert isinstance(decide(empty, database("staging"), granted=True), Refused)


def test_a_qualified_write_without_a_schema_in_the_url_is_refused():
    no_schema = DatabaseConfig(name="x", url="mysql://u@h", environment="staging")
    assert isinstance(decide(classification(W, OWN), no_schema, granted=True), Refused)


def test_a_server_wide_statement_says_so():
    decision = decide(classification(D, SERVER), database("staging"), granted=True)
    assert isinstance(decision, Refused) and "beyond this database" in decision.reason
