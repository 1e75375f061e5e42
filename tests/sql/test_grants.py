"""Reading SHOW GRANTS: which privileges an account holds, and on what."""

from __future__ import annotations

import pytest

from bot.sql.grants import read_grants

LINES = [
    # (SHOW GRANTS line, privileges, schema, table, reason)
    (
        "GRANT USAGE ON *.* TO `agent`@`%` IDENTIFIED BY PASSWORD '*ABC'",
        {"USAGE"},
        "*",
        "*",
        "the account's own line holds no privilege",
    ),
    (
        "GRANT SELECT, INSERT, UPDATE ON `shop`.* TO `agent`@`%`",
        {"SELECT", "INSERT", "UPDATE"},
        "shop",
        "*",
        "schema-level privileges",
    ),
    (
        "GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` WITH GRANT OPTION",
        {"ALL"},
        "*",
        "*",
        "ALL PRIVILEGES is ALL",
    ),
    (
        "GRANT SELECT (`id`, `total`), UPDATE (`total`) ON `shop`.`orders` TO `agent`@`%`",
        {"SELECT", "UPDATE"},
        "shop",
        "orders",
        "column lists are dropped, commas inside them do not split",
    ),
    (
        "GRANT EXECUTE ON PROCEDURE `shop`.`refresh` TO `agent`@`%`",
        {"EXECUTE"},
        "shop",
        "refresh",
        "a routine grant names its routine",
    ),
    (
        "GRANT SELECT ON `we``ird`.* TO `agent`@`%`",
        {"SELECT"},
        "we`ird",
        "*",
        "doubled backquotes are one",
    ),
    (
        "GRANT CREATE TEMPORARY TABLES, LOCK TABLES ON `shop`.* TO 'agent'@'%'",
        {"CREATE TEMPORARY TABLES", "LOCK TABLES"},
        "shop",
        "*",
        "privileges of several words",
    ),
]


@pytest.mark.parametrize(
    ("line", "privileges", "schema", "table", "reason"), LINES, ids=[row[-1] for row in LINES]
)
def test_a_grant_line_reads_as_its_privileges_and_object(line, privileges, schema, table, reason):
    [grant] = read_grants([line]).lines
    assert grant.privileges == privileges, reason
    assert (grant.schema, grant.table) == (schema, table), reason


def test_granted_roles_are_named_not_expanded():
    grants = read_grants(["GRANT `readers`, `oncall` TO `agent`@`%`"])
    assert grants.roles == ("readers", "oncall")
    assert grants.lines == ()


SCHEMA_MATCHES = [
    # (grant line, schema asked about, fold case, covered, reason)
    ("GRANT SELECT ON `shop`.* TO u", "shop", False, True, "the schema itself"),
    ("GRANT SELECT ON `shop`.* TO u", "SHOP", False, False, "case matters when names do"),
    ("GRANT SELECT ON `shop`.* TO u", "SHOP", True, True, "folded when the server folds"),
    ("GRANT SELECT ON `shop\\_%`.* TO u", "shop_2024", False, True, "a LIKE pattern"),
    ("GRANT SELECT ON `shop\\_%`.* TO u", "shopx2024", False, False, "\\_ is a literal _"),
    ("GRANT SELECT ON *.* TO u", "anything", False, True, "global covers every schema"),
    ("GRANT SELECT ON `shop`.`t` TO u", "shop", False, False, "a table is not the schema"),
]


@pytest.mark.parametrize(
    ("line", "schema", "fold", "covered", "reason"),
    SCHEMA_MATCHES,
    ids=[row[-1] for row in SCHEMA_MATCHES],
)
def test_a_grant_covers_the_schemas_the_server_would(line, schema, fold, covered, reason):
    grants = read_grants([line])
    assert ("SELECT" in grants.held_on(schema, fold_case=fold)) is covered, reason


def test_table_grants_count_as_privileges_somewhere_in_the_schema():
    grants = read_grants(["GRANT SELECT ON `shop`.`orders` TO u"])
    assert grants.anywhere_in("shop", fold_case=False) == {"SELECT"}
    assert grants.held_on("shop", fold_case=False) == frozenset()


def test_unreadable_lines_are_kept_aside():
    grants = read_grants(["REVOKE everything"])
    assert grants.unread == ("REVOKE everything",)
