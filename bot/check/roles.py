"""`dbagent check` for `[databases.access]`: each mapped role — whether the bot's login may
SET ROLE to it, and what it holds (SHOW GRANTS with the role set lists the role's grants) —
and a warning when the login holds data privileges of its own (with an access map it should
hold only the roles, so that the server decides what each person reads)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.check.database import database_lines
from bot.check.lines import Line, failed, passed, warning
from bot.config import DatabaseConfig, Limits
from bot.sql.grants import SHOW_GRANTS, Grants, read_grants

if TYPE_CHECKING:
    from bot.db import Database

# What an account holds without holding anything.
_NOTHING = frozenset({"USAGE"})


async def database_and_role_lines(config: DatabaseConfig, limits: Limits) -> list[Line]:
    lines = await database_lines(config, limits)
    if config.access:
        lines += await role_lines(config, limits)
    return lines


async def role_lines(config: DatabaseConfig, limits: Limits) -> list[Line]:
    from bot.db import Database, DbError  # the data layer, only when a check uses it
    from bot.db.roles import acting_as

    subject = f"database {config.name} access"
    schema = config.schema_name or ""
    database = Database(config, limits)
    lines: list[Line] = []
    try:
        try:
            own = await _grants(database)
        except DbError as exc:
            return [failed(subject, exc.message, "check the database's url and the server")]
        data = _data_grants(own)
        if data:
            lines.append(
                warning(
                    subject,
                    f"the login holds data privileges of its own: {'; '.join(data)}",
                    "with [databases.access] the login should hold only the roles (GRANT "
                    "role TO login); REVOKE the rest, so each person reads what their role "
                    "allows and no more",
                )
            )
        else:
            lines.append(passed(subject, "the login holds no data privilege of its own"))
        for role in sorted(set(config.access.values())):
            who = ", ".join(sorted(k for k, v in config.access.items() if v == role))
            try:
                with acting_as(role):
                    grants = await _grants(database)
            except DbError as exc:
                lines.append(
                    failed(
                        f"role {role} on {config.name}",
                        f"SET ROLE {role} refused ({exc.message}); mapped for {who}",
                        f"CREATE ROLE {role}, grant it what those people may read, and "
                        f"GRANT {role} TO the bot's login",
                    )
                )
                continue
            held = sorted(grants.anywhere_in(schema, fold_case=False) - _NOTHING)
            lines.append(
                passed(
                    f"role {role} on {config.name}",
                    f"SET ROLE works; for {who}; on {schema or 'its schema'}: "
                    f"{', '.join(held) or 'nothing'}; grants: "
                    + " | ".join(line.text for line in grants.lines if role in line.text),
                )
            )
    finally:
        await database.close()
    return lines


async def _grants(database: Database) -> Grants:
    execution = await database.execute([SHOW_GRANTS], read_only=True, limit=500)
    result = execution.last_result
    rows = result.rows if result is not None else ()
    return read_grants([str(row[0]) for row in rows])


def _data_grants(grants: Grants) -> list[str]:
    """The login's own grant lines that hold a privilege on data (not USAGE, not roles)."""
    return [line.text for line in grants.lines if line.privileges - _NOTHING]
