"""Through Slack's real entry point (a signed event, the Bolt app, the agent, MariaDB): no one
reads another thread's statement or plan, a name handed to a function is a read like any
other, and a change may not hide itself from replicas and logs.

Every thread runs on the bot's one database account, so "another session" here is another
connection of that same account, running a statement with a literal in it while the DM asks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from bench.datasets import connect
from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import CHANNEL, PRODUCTION, SCHEMA, STAGING, SlackHarness, run_sql
from tests.waiting import until

SECRET = "dm-secret-4111-1111"


@pytest.fixture
async def other_session(shop_url: str, mysql_url: str) -> AsyncIterator[int]:
    """A connection of the bot's own account, on the database's schema, running a statement
    with a literal in it (as another person's DM would); its connection id."""
    other = await connect(shop_url)
    async with other.cursor() as cursor:
        await cursor.execute("SELECT CONNECTION_ID()")
        ((thread,),) = await cursor.fetchall()

    async def run() -> None:
        with contextlib.suppress(Exception):  # ends when its query is killed
            async with other.cursor() as cursor:
                await cursor.execute(f"SELECT SLEEP(30), '{SECRET}' AS card FROM DUAL")
                await cursor.fetchall()

    running = asyncio.create_task(run())

    async def is_running() -> bool:
        rows = await run_sql(
            mysql_url,
            [f"SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = {thread} AND INFO > ''"],
        )
        return bool(rows)

    try:
        await until(is_running)
        yield thread
    finally:
        await run_sql(mysql_url, [f"KILL QUERY {thread}"])
        await running
        other.close()


async def ask(harness: SlackHarness, sql: str, database: str = PRODUCTION) -> tuple[str, str]:
    """The model runs `sql` in a channel's thread; (what the tool answered, everything Slack
    got there)."""
    harness.model.script(
        calls(call("execute_query", {"database": database, "sql": sql})), say("Done.")
    )
    thread_ts, _ = await harness.mention("what runs right now?")
    await harness.slack.wait_for(lambda: any(m.text == "Done." for m in harness.thread(thread_ts)))
    await harness.idle()
    (result,) = harness.model.tool_results()
    shown = [m.text + str(m.blocks) for m in harness.thread(thread_ts)]
    shown += [f.text for f in harness.slack.files_in(CHANNEL, thread_ts)]
    return result["content"], "\n".join(shown)


async def test_processlist_shows_no_other_threads_statement(
    harness: SlackHarness, other_session: int
) -> None:
    answer, shown = await ask(
        harness, "SELECT ID, USER, DB, INFO FROM information_schema.PROCESSLIST"
    )
    assert not answer.startswith("Blocked"), answer
    assert SECRET not in answer and SECRET not in shown
    assert str(other_session) not in answer.split("PROCESSLIST", 1)[-1].split()


# (sql, refused: else it runs and shows the reading connection alone, why)
PEEKS = [
    ("SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = {id}", False, "by its id"),
    ("TABLE information_schema.processlist", False, "TABLE, lower case"),
    ("SHOW FULL PROCESSLIST", True, "SHOW FULL PROCESSLIST"),
    ("SHOW PROCESSLIST", True, "SHOW PROCESSLIST"),
    ("EXPLAIN FOR CONNECTION {id}", True, "another connection's plan"),
    ("EXPLAIN FORMAT=JSON FOR CONNECTION {id}", True, "its plan in JSON"),
    ("DESCRIBE FORMAT=JSON FOR CONNECTION {id}", True, "DESCRIBE's spelling"),
    ("SHOW EXPLAIN FOR {id}", True, "SHOW EXPLAIN"),
    ("SELECT * FROM performance_schema.threads", True, "performance_schema's threads"),
]


@pytest.mark.parametrize(("sql", "refused", "why"), PEEKS, ids=[why for *_, why in PEEKS])
async def test_no_spelling_shows_another_connections_statement_or_plan(
    harness: SlackHarness, other_session: int, sql: str, refused: bool, why: str
) -> None:
    answer, shown = await ask(harness, sql.format(id=other_session))
    assert SECRET not in answer and SECRET not in shown, why
    assert "select_type" not in answer and "query_block" not in answer, why  # no plan
    assert answer.startswith("Blocked") is refused, f"{why}: {answer}"


NAMES = [
    ("SELECT LASTVAL(mysql.user)", "mysql.user", "the accounts table, by LASTVAL"),
    ("SELECT PREVIOUS VALUE FOR mysql.user", "mysql.user", "PREVIOUS VALUE FOR"),
    (f"SELECT LASTVAL({SCHEMA.upper()}.orders)", SCHEMA.upper(), "the other-case schema"),
    ("SELECT mysql.user.currval", "mysql.user", "the .currval spelling"),
    ("SELECT IS_USED_LOCK('dbagent_any_lock')", "beyond", "a named lock of the server"),
]


@pytest.mark.parametrize(("sql", "words", "why"), NAMES, ids=[why for *_, why in NAMES])
async def test_a_name_handed_to_a_function_is_a_read(
    harness: SlackHarness, sql: str, words: str, why: str
) -> None:
    answer, _ = await ask(harness, sql)
    # Today's server answers "'mysql.user' is not a SEQUENCE": that a table exists there.
    assert answer.startswith("Blocked") and words in answer, f"{why}: {answer}"
    assert "SEQUENCE" not in answer, why


HIDING = [
    ("SET SESSION sql_log_bin = 0; UPDATE orders SET status = 'x' WHERE id = 10", "sql_log_bin"),
    (
        "SET STATEMENT sql_log_bin = 0 FOR UPDATE orders SET status = 'x' WHERE id = 10",
        "sql_log_bin",
    ),
    ("SET @@session.`skip_replication` = 1; DELETE FROM orders WHERE id = 10", "skip_replication"),
    ("SET gtid_seq_no = 99; DELETE FROM orders WHERE id = 10", "gtid_seq_no"),
]


@pytest.mark.parametrize(("sql", "setting"), HIDING, ids=[setting for _, setting in HIDING])
async def test_a_change_that_hides_from_replicas_gets_no_card(
    harness: SlackHarness, sql: str, setting: str
) -> None:
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": sql})), say("Refused.")
    )
    thread_ts, _ = await harness.mention("quietly fix order 10")
    await harness.slack.wait_for(
        lambda: any(m.text == "Refused." for m in harness.thread(thread_ts))
    )
    await harness.idle()
    (result,) = harness.model.tool_results()
    assert result["content"].startswith(f"Blocked: statement 1 sets {setting}")
    assert not harness.cards(thread_ts, CHANNEL)
