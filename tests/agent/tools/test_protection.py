"""Who a call acts for decides what it may do: the role from [databases.access], whether
masked values show, where the database may be used, and how a missing privilege is told.
One rule per row, with its reason."""

from __future__ import annotations

import pytest

from bot.agent.outcomes import Requester
from bot.agent.tools.protection import (
    NoAccess,
    place_refusal,
    privilege_message,
    role_for,
    sees_raw,
)
from bot.config import ConfigError, DatabaseConfig, load_settings
from bot.db.roles import acting_as
from bot.db.types import MissingPrivilege
from bot.sql.roles import switches_role

URL = "mysql://bot@db:3306/shop"
MAPPED = DatabaseConfig(
    name="shop",
    url=URL,
    environment="staging",
    access={"U0ANN": "analyst", "S0SUPPORT": "support", "S0OPS": "ops"},
    unmasked_for=["U0DPO", "S0PRIVACY"],
)
OPEN = MAPPED.model_copy(update={"access": {**MAPPED.access, "*": "reader"}})

# (database, user, groups, role, why)
ROLES = [
    (MAPPED, "U0ANN", (), "analyst", "by user ID"),
    (MAPPED, "U0ANN", ("S0SUPPORT",), "analyst", "the user's own entry wins over a group"),
    (MAPPED, "U0BOB", ("S0SUPPORT",), "support", "by user group"),
    (MAPPED, "U0BOB", ("S0OPS", "S0SUPPORT"), "support", "the map's order decides"),
    (OPEN, "U0EVE", (), "reader", '"*" for everyone else'),
    (OPEN, "U0EVE", ("S0OPS",), "ops", 'a group before "*"'),
]


@pytest.mark.parametrize(("database", "user", "groups", "role", "why"), ROLES)
def test_a_person_gets_the_role_the_access_map_gives(
    database: DatabaseConfig, user: str, groups: tuple[str, ...], role: str, why: str
) -> None:
    assert role_for(database, Requester(user, groups=groups)) == role, why


def test_someone_the_map_does_not_name_is_refused_and_no_map_means_no_role() -> None:
    with pytest.raises(NoAccess, match="no database role on shop"):
        role_for(MAPPED, Requester("U0EVE", groups=("S0OTHER",)))
    assert role_for(MAPPED.model_copy(update={"access": {}}), Requester("U0EVE")) is None


@pytest.mark.parametrize(
    ("user", "groups", "raw", "why"),
    [
        ("U0DPO", (), True, "named in unmasked_for"),
        ("U0BOB", ("S0PRIVACY",), True, "a member of a group in it"),
        ("U0BOB", ("S0SUPPORT",), False, "anyone else"),
    ],
)
def test_unmasked_for_names_people_and_groups(
    user: str, groups: tuple[str, ...], raw: bool, why: str
) -> None:
    assert sees_raw(MAPPED, Requester(user, groups=groups)) is raw, why


@pytest.mark.parametrize(
    ("channels", "session", "allowed", "why"),
    [
        (None, "T1:C0ANY:1.0", True, "no channels: anywhere"),
        (["C0OPS"], "T1:C0OPS:1.0", True, "a listed channel"),
        (["C0OPS"], "T1:C0ANY:1.0", False, "another channel"),
        (["C0OPS"], "T1:D0DM:1.0", False, "a DM is not a listed channel"),
        (["C0OPS"], "mcp:client", False, "no channel at all"),
        ([], "T1:C0OPS:1.0", False, "an empty list: nowhere"),
    ],
)
def test_channels_restrict_where_a_database_is_used(
    channels: list[str] | None, session: str, allowed: bool, why: str
) -> None:
    config = MAPPED.model_copy(update={"channels": channels})
    assert (place_refusal(config, session) is None) is allowed, why


@pytest.mark.parametrize(
    ("sql", "switches"),
    [
        ("SET ROLE analyst", True),
        ("set role NONE", True),
        ("SET DEFAULT ROLE analyst FOR bot", True),
        ("SELECT 1; SET ROLE admin", True),
        ("/*! SET ROLE admin */", True),
        ("SELECT role FROM people", False),
        ("SET @role = 'x'", False),
        ("SELECT 'SET ROLE admin'", False),
    ],
)
def test_statements_switching_the_role_are_recognised(sql: str, switches: bool) -> None:
    assert switches_role(sql) is switches


@pytest.mark.parametrize(
    ("code", "server", "grant", "why"),
    [
        (
            1142,
            "SELECT command denied to user 'bot'@'10.0.0.1' for table `shop`.`salaries`",
            "GRANT SELECT ON `shop`.`salaries` TO support",
            "a table",
        ),
        (
            1143,
            "SELECT command denied to user 'bot'@'%' for column 'email' in table 'customers'",
            "GRANT SELECT (email) ON `shop`.`customers` TO support",
            "a column",
        ),
        (
            1044,
            "Access denied for user 'bot'@'%' to database 'other'",
            "GRANT … ON `other`.* TO support",
            "a database",
        ),
    ],
)
def test_a_missing_privilege_is_told_with_the_grant_that_gives_it(
    code: int, server: str, grant: str, why: str
) -> None:
    exc = MissingPrivilege(f"MariaDB error {code}: {server}", code=code, server=server)
    with acting_as("support"):
        message = privilege_message(exc, "shop-db", "shop")
    assert message.startswith("Blocked: your database role support may not"), why
    assert grant in message, why
    assert "database administrator" in message


def test_the_access_map_is_checked_when_loaded(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "dbagent.toml"
    for access, problem in (
        ('"U0ANN" = "analyst; DROP"', "role for U0ANN"),
        ('"alice" = "analyst"', "not a Slack user or user-group ID"),
    ):
        path.write_text(
            f'[[databases]]\nname = "shop"\nurl = "{URL}"\nenvironment = "staging"\n'
            f"[databases.access]\n{access}\n"
        )
        with pytest.raises(ConfigError, match=problem):
            load_settings(path)
    path.write_text(
        f'[[databases]]\nname = "shop"\nurl = "{URL}"\nenvironment = "staging"\n'
        'masked_columns = ["*.email"]\nchannels = ["C0OPS"]\n'
        '[databases.access]\n"S0SUPPORT" = "support"\n"*" = "reader"\n'
    )
    (database,) = load_settings(path).databases
    assert database.access == {"S0SUPPORT": "support", "*": "reader"}
    assert database.masked_columns == ["*.email"] and database.channels == ["C0OPS"]
