"""What the server says a statement reaches: routine bodies, triggers, cascading foreign keys
and the case rule, read from the real MariaDB; and the walk through them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bench.datasets import recreate_schema, schema_url
from bot.config import Limits
from bot.db import DatabaseRegistry
from bot.db.reach import (
    SERVER,
    SNAPSHOT_TTL_S,
    Reaching,
    Routine,
    ServerReach,
    Trigger,
    look_up,
    walk,
)
from bot.sql.risk import TableRef, classify
from tests.db.support import server_rows, staging
from tests.schemas import run_schema

HOME = run_schema("dbagent_t_reach")
AWAY = run_schema("dbagent_t_reach_x")
READER = run_schema("dbagent_t_reader")

SETUP = [
    "CREATE TABLE parent (id INT PRIMARY KEY, a INT)",
    "CREATE TABLE child (id INT PRIMARY KEY, parent_id INT,"
    " CONSTRAINT fk_child FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE)",
    "CREATE TABLE log (id INT)",
    f"CREATE TABLE {AWAY}.t (id INT PRIMARY KEY, a INT)",
    f"CREATE TABLE {AWAY}.orphan (id INT, parent_id INT,"
    f" CONSTRAINT fk_orphan FOREIGN KEY (parent_id) REFERENCES {HOME}.parent (id)"
    " ON UPDATE SET NULL)",
    "CREATE PROCEDURE p_dynamic(s TEXT) EXECUTE IMMEDIATE s",
    f"CREATE PROCEDURE p_away() UPDATE {AWAY}.t SET a = 1",
    "CREATE PROCEDURE p_home() UPDATE log SET id = 1",
    "CREATE TRIGGER trg_log AFTER UPDATE ON parent FOR EACH ROW INSERT INTO log VALUES (NEW.id)",
    f"CREATE VIEW v_away AS SELECT id FROM {AWAY}.t",
]


@pytest.fixture
async def home(mysql_url: str) -> AsyncIterator[str]:
    await recreate_schema(mysql_url, AWAY)  # first: it may hold a foreign key into HOME
    await recreate_schema(mysql_url, HOME)
    url = schema_url(mysql_url, HOME)
    for statement in SETUP:
        await server_rows(url, statement)
    yield url
    # AWAY holds a foreign key into HOME: it goes first.
    await server_rows(mysql_url, f"DROP DATABASE IF EXISTS {AWAY}")


@pytest.fixture
async def registry(home: str) -> AsyncIterator[DatabaseRegistry]:
    opened = DatabaseRegistry([staging(home, name="home")], Limits())
    yield opened
    await opened.close()


async def test_the_server_tells_its_case_rule_routines_triggers_and_cascades(
    registry: DatabaseRegistry,
) -> None:
    reach = await look_up(registry.get("home"), programs=True)
    assert reach.lower_case_table_names == 0 and reach.programs_read
    bodies = {routine.name: routine.body for routine in reach.routines}
    assert bodies == {
        "p_dynamic": "EXECUTE IMMEDIATE s",
        "p_away": f"UPDATE {AWAY}.t SET a = 1",
        "p_home": "UPDATE log SET id = 1",
    }
    (view,) = reach.views
    assert view.name == "v_away" and view.definition and AWAY in view.definition
    (trigger,) = reach.triggers
    assert trigger.describe() == f"{HOME}.trg_log (AFTER UPDATE on {HOME}.parent)"
    keys = {
        key.name: (key.schema, key.table, key.on_update, key.on_delete)
        for key in reach.foreign_keys
    }
    assert keys == {
        "fk_child": (HOME, "child", "RESTRICT", "CASCADE"),
        "fk_orphan": (AWAY, "orphan", "SET NULL", "RESTRICT"),
    }


async def test_a_read_needs_only_the_case_rule(registry: DatabaseRegistry) -> None:
    reach = await look_up(registry.get("home"), programs=False)
    assert reach.lower_case_table_names == 0 and [v.name for v in reach.views] == ["v_away"]
    assert not reach.programs_read and reach.routines == ()


async def test_the_snapshot_is_kept_briefly_and_read_afresh_when_asked(
    registry: DatabaseRegistry, home: str
) -> None:
    database = registry.get("home")
    first = await look_up(database, programs=True)
    await server_rows(home, "CREATE PROCEDURE p_new() UPDATE log SET id = 2")
    assert await look_up(database, programs=True) is first
    fresh = await look_up(database, programs=True, max_age_s=0)
    assert "p_new" in {routine.name for routine in fresh.routines}


async def test_ddl_the_bot_runs_drops_the_kept_snapshot_at_once(
    registry: DatabaseRegistry,
) -> None:
    database = registry.get("home")
    first = await look_up(database, programs=True)
    trigger = "CREATE TRIGGER trg_new AFTER INSERT ON log FOR EACH ROW SET @x = 1"
    await database.execute([trigger], read_only=False, limit=1)
    after = await look_up(database, programs=True)
    assert after is not first and "trg_new" in {t.name for t in after.triggers}


async def test_a_bounded_write_of_the_bot_drops_the_kept_snapshot(
    registry: DatabaseRegistry,
) -> None:
    database = registry.get("home")
    first = await look_up(database, programs=True)
    async with database.write_session() as session:
        await session.fetch("UPDATE log SET id = 3", limit=1)
    assert await look_up(database, programs=True) is not first


async def test_a_snapshot_begun_during_a_write_of_the_bot_is_not_kept(
    registry: DatabaseRegistry,
) -> None:
    database = registry.get("home")
    async with database.write_session() as session:
        during = await look_up(database, programs=True)
        await session.fetch("CREATE PROCEDURE p_during() UPDATE log SET id = 4", limit=1)
    after = await look_up(database, programs=True)
    assert after is not during and "p_during" in {r.name for r in after.routines}


async def test_the_kept_snapshot_lasts_only_its_lifetime(registry: DatabaseRegistry) -> None:
    database, now = registry.get("home"), [1000.0]
    first = await look_up(database, programs=True, clock=lambda: now[0])
    now[0] += SNAPSHOT_TTL_S
    assert await look_up(database, programs=True, clock=lambda: now[0]) is first
    now[0] += 0.001
    assert await look_up(database, programs=True, clock=lambda: now[0]) is not first


async def test_an_account_that_may_not_read_a_body_reaches_the_whole_server(
    home: str, mysql_url: str
) -> None:
    account = f"'{READER}'@'%'"
    await server_rows(mysql_url, f"DROP USER IF EXISTS {account}")
    await server_rows(mysql_url, f"CREATE USER {account}")
    try:
        await server_rows(mysql_url, f"GRANT SELECT, EXECUTE ON {HOME}.* TO {account}")
        host = home.split("@", 1)[1]
        opened = DatabaseRegistry([staging(f"mysql://{READER}@{host}", name="r")], Limits())
        try:
            reach = await look_up(opened.get("r"), programs=True)
        finally:
            await opened.close()
    finally:
        await server_rows(mysql_url, f"DROP USER IF EXISTS {account}")
    routine = reach.routine(HOME, "p_home")
    assert routine is not None and routine.body is None  # listed, body withheld
    assert reach.triggers == () and not reach.triggers_visible  # trg_log is hidden from it
    assert reach.view(TableRef(HOME, "v_away")) is not None
    assert reach.view(TableRef(HOME, "v_away")).definition is None  # no SHOW VIEW
    (found,) = [walk(s, reach) for s in classify("CALL p_home()").statements]
    assert found.writes[0].table == SERVER and "cannot be read" in found.writes[0].via


async def test_what_a_walk_shows_for_a_write_that_stays_home(registry: DatabaseRegistry) -> None:
    reach = await look_up(registry.get("home"), programs=True)
    (update,) = classify("UPDATE parent SET a = 2").statements
    found = walk(update, reach)
    assert found.triggers == (f"{HOME}.trg_log (AFTER UPDATE on {HOME}.parent)",)
    assert found.cascades == (f"{AWAY}.orphan (parent_id) via fk_orphan (ON UPDATE SET NULL)",)
    assert Reaching(TableRef(HOME, "log"), f"trigger {found.triggers[0]}") in found.writes
    (delete,) = classify("DELETE FROM parent").statements
    assert walk(delete, reach).cascades == (
        f"{HOME}.child (parent_id) via fk_child (ON DELETE CASCADE)",
    )


WALKS = [
    # (sql, schema-qualified tables it writes, why)
    ("UPDATE t SET a = 1", {("shop", "t")}, "an unqualified name is the default schema's"),
    ("UPDATE other.t SET a = 1", {("other", "t")}, "a qualified name is its own"),
    ("CALL p()", {("shop", "log")}, "a call writes what its body writes, not the routine"),
    ("CALL q()", {("*", "*")}, "an unknown routine reaches the whole server"),
]


@pytest.mark.parametrize(("sql", "tables", "why"), WALKS, ids=[row[-1] for row in WALKS])
def test_the_walk_resolves_names_the_way_the_server_does(sql, tables, why):
    body = "UPDATE log SET id = 1"
    reach = ServerReach(
        "shop", 0, (Routine("shop", "p", "PROCEDURE", body, classify(body)),), programs_read=True
    )
    (statement,) = classify(sql).statements
    written = {(r.table.schema, r.table.name) for r in walk(statement, reach).writes}
    assert written == tables, why


def test_an_insert_fires_update_triggers_only_when_it_may_update() -> None:
    body = "INSERT INTO log VALUES (NEW.id)"
    on_update = Trigger("shop", "trg", "shop", "t", "UPDATE", "AFTER", body, classify(body))
    reach = ServerReach("shop", 0, triggers=(on_update,), programs_read=True)
    (insert,) = classify("INSERT INTO t VALUES (1)").statements
    assert walk(insert, reach).triggers == (on_update.describe(),)  # the guard: it may
    assert walk(insert, reach, upsert=False).triggers == ()  # the card: it does not
