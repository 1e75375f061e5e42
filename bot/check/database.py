"""Each database: it connects; its flavour, version and lower_case_table_names; the account's
privileges from SHOW GRANTS, with warnings for what the bot never needs, and what it will need
and lacks (bot.check.privileges)."""

from __future__ import annotations

from bot.check.lines import Line, failed, passed, warning
from bot.check.privileges import privilege_lines, read_reach
from bot.config import DatabaseConfig, Environment, Limits
from bot.sql.grants import (
    SERVER_PRIVILEGES,
    SHOW_GRANTS,
    WRITE_PRIVILEGES,
    Grants,
    read_grants,
)

SERVER_FACTS = "SELECT VERSION(), @@version_comment, @@lower_case_table_names"


async def database_lines(config: DatabaseConfig, limits: Limits) -> list[Line]:
    from bot.db import Database, DbError  # the data layer, only when a check uses it

    subject = f"database {config.name} ({config.environment.value})"
    targets = [("", config)]
    if config.read_url is not None:
        replica = config.model_copy(update={"url": config.read_url, "read_url": None})
        targets.append((" replica", replica))
    lines: list[Line] = []
    for suffix, target in targets:
        database = Database(target, limits)
        # A primary of a writable database is read as the guard reads it before a change.
        writes = not suffix and config.environment is not Environment.PRODUCTION
        try:
            execution = await database.execute(
                [SERVER_FACTS, SHOW_GRANTS], read_only=True, limit=200
            )
            reach = await read_reach(database, writes=writes)
        except DbError as exc:
            lines.append(
                failed(
                    subject + suffix,
                    exc.message,
                    "check its url in the config (user, password, host, port, schema) and "
                    "that the server is reachable from here",
                )
            )
            continue
        finally:
            await database.close()
        facts, grants_result = (outcome.result for outcome in execution.outcomes)
        assert facts is not None and grants_result is not None
        version, comment, lower_case = facts.rows[0]
        flavour = "MariaDB" if "mariadb" in f"{version} {comment}".lower() else "MySQL"
        grants = read_grants([str(row[0]) for row in grants_result.rows])
        fold_case = str(lower_case) != "0"
        schema = target.schema_name or ""
        held = sorted(grants.anywhere_in(schema, fold_case=fold_case))
        lines.append(
            passed(
                subject + suffix,
                f"{flavour} {version}, lower_case_table_names={lower_case}, "
                f"privileges on {schema}: {_named(frozenset(held)) or 'none'}",
            )
        )
        lines.extend(
            _privilege_warnings(subject + suffix, target, grants, schema, fold_case=fold_case)
        )
        lines.extend(
            privilege_lines(
                subject + suffix, target, grants, reach, writes=writes, fold_case=fold_case
            )
        )
    return lines


def _privilege_warnings(
    subject: str, config: DatabaseConfig, grants: Grants, schema: str, *, fold_case: bool
) -> list[Line]:
    account = f"'{config.target.user}'@'<host>'"
    warnings: list[Line] = []
    risky = _named(grants.server_wide() & SERVER_PRIVILEGES)
    if risky:
        warnings.append(
            warning(
                subject,
                f"the account holds {risky} on the whole server, which the bot never needs "
                "(read-only sessions do not stop administrative statements)",
                f"give the bot its own account with only what it needs, or REVOKE {risky} "
                f"ON *.* FROM {account}",
            )
        )
    if config.environment is Environment.PRODUCTION:
        writes = _named(grants.anywhere_in(schema, fold_case=fold_case) & WRITE_PRIVILEGES)
        if writes:
            warnings.append(
                warning(
                    subject,
                    f"the account may write on a production database ({writes}); dbagent "
                    "refuses every write there, and the account should not be able to either",
                    f"use a read-only account: GRANT SELECT, SHOW VIEW ON `{schema}`.* only",
                )
            )
    on_schema = grants.held_on(schema, fold_case=fold_case)
    if not on_schema & {"SELECT", "ALL"}:
        some_tables = "SELECT" in grants.anywhere_in(schema, fold_case=fold_case)
        warnings.append(
            warning(
                subject,
                "the account has SELECT on only some tables"
                if some_tables
                else f"the account has no SELECT on {schema}; the bot cannot read it",
                f"GRANT SELECT, SHOW VIEW ON `{schema}`.* TO {account}",
            )
        )
    if grants.roles:
        warnings.append(
            warning(
                subject,
                f"privileges granted through roles ({', '.join(grants.roles)}) are not "
                "shown or checked",
                "grant the bot's privileges to its account directly, or check the roles by hand",
            )
        )
    return warnings


def _named(privileges: frozenset[str]) -> str:
    """Privileges as the server names them, ALL as ALL PRIVILEGES (which includes SUPER…)."""
    names = ["ALL PRIVILEGES" if name == "ALL" else name for name in sorted(privileges)]
    return ", ".join(names)
