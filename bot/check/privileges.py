"""What the account may do against what the bot will ask of it: for each need, the privilege
and what fails without it, so `dbagent check` names a failure before a person meets it.

Two sources, both the server's own word: SHOW GRANTS (read by bot.sql.grants) for the
privileges a statement needs when it runs (INSERT, UPDATE, DELETE, EXECUTE), and the guard's
own reads of information_schema (bot.db.reach.look_up) for what the guard must see before it
lets a change through (triggers, foreign keys, routine bodies, view definitions). A need the
guard cannot meet refuses every write; a missing privilege fails the approved change on the
server, after someone clicked Approve.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.check.lines import Line, failed, passed, warning
from bot.config import DatabaseConfig, Environment
from bot.sql.grants import Grants

if TYPE_CHECKING:
    from bot.db import Database
    from bot.db.reach import ServerReach


@dataclass(frozen=True, slots=True)
class WriteNeed:
    privilege: str
    without: str  # what happens without it


# The statements an approver may let through, and what becomes of them without the privilege.
WRITE_NEEDS = (
    WriteNeed("UPDATE", "approved UPDATEs fail on the server after the click"),
    WriteNeed("DELETE", "approved DELETEs fail on the server after the click"),
    WriteNeed("INSERT", "approved INSERTs fail on the server after the click"),
)


async def read_reach(database: Database, *, writes: bool) -> ServerReach | str:
    """What the guard reads before it judges a statement (a write's reads when `writes`), or
    why it could not be read."""
    from bot.db.reach import ReachError, look_up

    try:
        return await look_up(database, programs=writes, max_age_s=0)
    except ReachError as exc:
        return str(exc)


def privilege_lines(
    subject: str,
    config: DatabaseConfig,
    grants: Grants,
    reach: ServerReach | str,
    *,
    writes: bool,
    fold_case: bool,
) -> list[Line]:
    """One line per need that will fail (✗ when it stops every write, ! when some); on a
    writable database, one ✓ when the account can do all that approved changes ask."""
    schema = config.schema_name or ""
    account = f"'{config.target.user}'@'<host>'"
    if isinstance(reach, str):
        return [
            failed(
                subject,
                f"the guard cannot read what statements reach ({reach}); every statement "
                "would be refused",
                f"let the account read information_schema about `{schema}` (any privilege "
                "on the schema does)",
            )
        ]
    lines = _view_lines(subject, reach, schema, account)
    if writes and config.environment is not Environment.PRODUCTION:
        lines += _guard_lines(subject, reach, schema, account)
        lines += _write_lines(subject, grants, schema, account, fold_case=fold_case)
        lines += _routine_lines(subject, grants, reach, schema, account, fold_case=fold_case)
    if lines or not writes or config.environment is Environment.PRODUCTION:
        return lines
    return [
        passed(
            f"changes on {config.name}",
            "the account holds what approved changes need (INSERT, UPDATE, DELETE; triggers, "
            "foreign keys and routines visible to the guard)",
        )
    ]


def _view_lines(subject: str, reach: ServerReach, schema: str, account: str) -> list[Line]:
    hidden = [v.name for v in reach.views if v.schema == schema and v.definition is None]
    if not hidden:
        return []
    return [
        warning(
            subject,
            f"the account cannot read the definition of {_some(hidden)}: statements that "
            "use them are refused (what a view reads is not known)",
            f"GRANT SHOW VIEW ON `{schema}`.* TO {account}",
        )
    ]


def _guard_lines(subject: str, reach: ServerReach, schema: str, account: str) -> list[Line]:
    lines = []
    if not reach.triggers_visible:
        lines.append(
            failed(
                subject,
                "without TRIGGER the account cannot see the schema's triggers, so the guard "
                "refuses every change (what it fires is not known)",
                f"GRANT TRIGGER ON `{schema}`.* TO {account}",
            )
        )
    if not reach.keys_visible:
        lines.append(
            failed(
                subject,
                "the account cannot see foreign keys other schemas hold on this one, so the "
                "guard refuses every change (where it cascades is not known)",
                f"GRANT REFERENCES ON *.* TO {account} (it lets the account write nothing)",
            )
        )
    return lines


def _write_lines(
    subject: str, grants: Grants, schema: str, account: str, *, fold_case: bool
) -> list[Line]:
    whole = grants.held_on(schema, fold_case=fold_case)
    some = grants.anywhere_in(schema, fold_case=fold_case)
    missing = [need for need in WRITE_NEEDS if not {need.privilege, "ALL"} & whole]
    if not missing:
        return []
    names = ", ".join(need.privilege for need in missing)
    fix = f"GRANT {names} ON `{schema}`.* TO {account}"
    roles = f" (roles {', '.join(grants.roles)} were not read)" if grants.roles else ""
    if len(missing) == len(WRITE_NEEDS) and not some & {"INSERT", "UPDATE", "DELETE", "ALL"}:
        text = f"the account may not change {schema}: every approved change would fail{roles}"
        return [(warning if grants.roles else failed)(subject, text, fix)]
    text = "; ".join(
        f"without {need.privilege}"
        + (" on every table" if {need.privilege, "ALL"} & some else "")
        + f", {need.without}"
        for need in missing
    )
    return [warning(subject, text + roles, fix)]


def _routine_lines(
    subject: str, grants: Grants, reach: ServerReach, schema: str, account: str, *, fold_case: bool
) -> list[Line]:
    lines = []
    unread = [r.name for r in reach.routines if r.schema == schema and not r.body]
    if unread:
        lines.append(
            warning(
                subject,
                f"the account cannot read the body of {_some(unread)}: a CALL of them (or a "
                "statement using them) is refused",
                "create the routines with the bot's account as DEFINER, or grant it SHOW "
                "ROUTINE (MySQL 8.0.20+, MariaDB 11.3+) / SELECT on mysql.proc (older MariaDB)",
            )
        )
    procedures = [r.name for r in reach.routines if r.schema == schema and r.kind == "PROCEDURE"]
    held = grants.anywhere_in(schema, fold_case=fold_case)
    if not {"EXECUTE", "ALL"} & held:
        called = f" of {_some(procedures)}" if procedures else ""
        lines.append(
            warning(
                subject,
                f"without EXECUTE an approved CALL{called} fails on the server after the click",
                f"GRANT EXECUTE ON `{schema}`.* TO {account}",
            )
        )
    return lines


def _some(names: list[str], shown: int = 3) -> str:
    listed = ", ".join(sorted(names)[:shown])
    more = len(names) - shown
    return listed + (f" and {more} more" if more > 0 else "")
