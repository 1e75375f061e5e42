"""The guard: what happens to a classified statement on a given database.

A pure function of (classification, the database's configuration, whether a grant matches).
Its messages tell the model what to do next.

| risk        | production                      | other environments                      |
|-------------|---------------------------------|-----------------------------------------|
| read_only   | run read-only, on the replica   | run read-only (replica when configured) |
| write, ddl  | refuse; show SQL for the change | run with a matching grant, else approval|
| transaction | refuse                          | refuse                                  |
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import DatabaseConfig, Environment
from bot.sql.risk import Classification, Risk


@dataclass(frozen=True, slots=True)
class Run:
    read_only: bool
    use_replica: bool = False


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    reason: str  # starts with "Blocked: "


Decision = Run | NeedsApproval | Refused

PRODUCTION_WRITE = (
    "Blocked: writes on production databases are not allowed; show the SQL to the user "
    "for their change process."
)
TRANSACTION_CONTROL = (
    "Blocked: transaction control statements (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, XA, "
    "autocommit) are not allowed; each approved statement runs on its own. Send the change "
    "as plain statements in one execute_query call instead."
)
NO_STATEMENT = "Blocked: no SQL statement found."
# The classifier's target schema for statements that reach beyond any one database.
SERVER_WIDE = "*"


def _foreign_targets(classification: Classification, own_schema: str | None) -> list[str]:
    """Targets qualified with a schema other than the database's own."""
    foreign = []
    for statement in classification.statements:
        for target in statement.targets:
            if target.schema is None:
                continue
            if target.schema == SERVER_WIDE:
                foreign.append(
                    "things beyond this database (the server's users, privileges, settings "
                    "or files, stored programs, or other servers)"
                )
            elif own_schema is None or target.schema.lower() != own_schema.lower():
                foreign.append(f"{target.schema}.{target.name}" if target.name else target.schema)
    return foreign


def decide(classification: Classification, database: DatabaseConfig, *, granted: bool) -> Decision:
    if not classification.statements:
        return Refused(NO_STATEMENT)
    risk = classification.risk
    production = database.environment is Environment.PRODUCTION
    if risk is Risk.READ_ONLY:
        return Run(read_only=True, use_replica=database.read_url is not None)
    if risk is Risk.TRANSACTION:
        return Refused(TRANSACTION_CONTROL)
    if production:
        return Refused(PRODUCTION_WRITE)
    foreign = _foreign_targets(classification, database.schema_name)
    if foreign:
        own = database.schema_name or "(none configured)"
        return Refused(
            f"Blocked: the statement changes {', '.join(sorted(set(foreign)))}, outside "
            f"{database.name}'s own schema {own}; changes are allowed only in the database's "
            "own schema."
        )
    if granted:
        return Run(read_only=False)
    why = "; ".join(classification.reasons) or f"{risk.value} statement"
    return NeedsApproval(
        f"Awaiting approval: a {risk.value} statement on {database.name} "
        f"({database.environment.value}) needs an approver's click ({why})."
    )
