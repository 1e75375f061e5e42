"""Exactly once or honestly unknown: a bot process SIGKILLed while an approved write runs, then
started again on the same state — the change is reported, never re-run, and its thread grant
is gone. Real processes, real MariaDB, a row lock held by the test."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncmy
import pytest

from bench.datasets import connect
from bot.agent import Agent, AwaitingApproval, Interrupted, Skills, build_model_client
from bot.agent.sessions import Session
from bot.config import Mode
from bot.db import DatabaseRegistry
from bot.state import open_state
from bot.state.executions import ExecutionRecord
from bot.state.grants import GrantScope
from tests.agent.support import REQUESTER, SCHEMA, STAGING, make_settings, query, run_statements
from tests.fakes.model_server import FakeModelServer, call, calls, say

CANCEL_11 = "UPDATE orders SET status = 'cancelled' WHERE id = 11"
KILLED_SESSION = "T1:C1:1700000000.000900"
REPO = Path(__file__).resolve().parents[2]
WAIT_S = 30.0


@pytest.fixture
async def row_11_locked(shop_url: str) -> AsyncIterator[asyncmy.Connection]:
    """Order 11 locked by another transaction, so an UPDATE of it waits for the test."""
    connection = await connect(shop_url)
    async with connection.cursor() as cursor:
        await cursor.execute("START TRANSACTION")
        await cursor.execute("SELECT * FROM orders WHERE id = 11 FOR UPDATE")
        await cursor.fetchall()
    yield connection
    connection.close()


async def wait_until_the_write_waits(shop_url: str) -> None:
    """The approved write's transaction is waiting for the row lock (its before-image read,
    `SELECT … FOR UPDATE`, comes first)."""
    sql = (
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
        f"WHERE DB = '{SCHEMA}' AND ID <> CONNECTION_ID() AND INFO LIKE '%orders%FOR UPDATE'"
    )
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if (await query(shop_url, sql))[0][0]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the approved UPDATE never reached the server")


@asynccontextmanager
async def restarted_agent(
    model_server: FakeModelServer, shop_url: str, state: Path
) -> AsyncIterator[tuple[Agent, list[Interrupted]]]:
    """The bot started again on `state`, and what its recovery found."""
    settings = make_settings(model_server, shop_url).model_copy(update={"dbagent_state_dir": state})
    store = await open_state(settings)
    registry = DatabaseRegistry(settings.databases, settings.limits)
    model = build_model_client(settings)
    agent = Agent(
        settings=settings, state=store, databases=registry, model=model, skills=Skills.load()
    )
    try:
        yield agent, await agent.recover()
    finally:
        await model.close()
        await registry.close()
        await store.close()


def tool_results(session: Session | None) -> list[str]:
    assert session is not None
    return [m["content"] for m in session.messages if m.get("role") == "tool"]


async def killed_while_it_runs(
    model_server: FakeModelServer, shop_url: str, state: Path, row_11_locked: asyncmy.Connection
) -> None:
    """A bot process on `state` SIGKILLed while its approved CANCEL_11 waits for the row."""
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})))
    bot = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.agent.approve_in_subprocess",
        str(state),
        shop_url,
        model_server.url,
        KILLED_SESSION,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        await wait_until_the_write_waits(shop_url)
    finally:
        bot.send_signal(signal.SIGKILL)
        await bot.communicate()
    assert bot.returncode == -signal.SIGKILL
    row_11_locked.close()  # the lock is gone: a write the server still held could go on now


async def test_a_write_killed_while_it_runs_is_reported_never_rerun_and_its_grant_is_gone(
    model_server: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    row_11_locked: asyncmy.Connection,
) -> None:
    state = tmp_path / "state"
    await killed_while_it_runs(model_server, shop_url, state, row_11_locked)

    async with restarted_agent(model_server, shop_url, state) as (agent, interrupted):
        (item,) = interrupted
        assert (item.session_id, item.database, item.sql) == (KILLED_SESSION, STAGING, CANCEL_11)
        assert item.applied is False  # COMMIT was never sent
        assert "outcome unknown (the bot stopped while it ran)" in item.text
        assert STAGING in item.text and "not applied" in item.text
        records = await agent.audit.since(None)
        unknown = [r for r in records if r["outcome"].startswith("outcome unknown")]
        assert [r["sql"] for r in unknown] == [CANCEL_11]
        assert [r["outcome"] for r in records].count("executed") == 0
        assert "outcome unknown" in tool_results(await agent.session(KILLED_SESSION))[-1]
        assert await agent.recover() == []  # reported once

        # The same SQL again in the thread: the thread grant is gone; it needs an approver.
        model_server.script(calls(call("execute_query", {"database": STAGING, "sql": CANCEL_11})))
        again = await agent.handle_message(
            KILLED_SESSION, "try again", requester=REQUESTER, mode=Mode.AGENT
        )
        assert isinstance(again, AwaitingApproval)
        assert (await query(shop_url, "SELECT status FROM orders WHERE id = 11")) == [("pending",)]


async def test_a_change_cut_off_around_its_commit_may_or_may_not_be_applied(
    model_server: FakeModelServer, shop_url: str, tmp_path: Path
) -> None:
    """What a kill between `committing` and the outcome leaves in the state: the bot cannot
    know whether COMMIT arrived, and says so."""
    state = tmp_path / "state"
    store = await open_state(
        make_settings(model_server, shop_url).model_copy(update={"dbagent_state_dir": state})
    )
    executions = store.executions
    record = ExecutionRecord(
        id="e1",
        session_id=KILLED_SESSION,
        database=STAGING,
        environment="staging",
        sql=CANCEL_11,
        requester=REQUESTER.user_id,
        approver="U0APPROVE",
        grant_id="g1",
        transactional=True,
        started_at=time.time(),
    )
    await executions.begin(record)
    await executions.committing(record.id)
    await store.close()

    async with restarted_agent(model_server, shop_url, state) as (_, interrupted):
        (item,) = interrupted
        assert item.applied is None
        assert "may or may not have been applied" in item.text
        assert "COMMIT was being sent" in item.text


CANCEL_CUSTOMER_1 = "UPDATE orders SET status = 'cancelled' WHERE customer_id = 1"


@pytest.mark.parametrize(
    ("meanwhile", "applied"),
    [
        ([], True),  # COMMIT arrived: the rows hold what the change wrote
        (
            [
                f"UPDATE {SCHEMA}.orders SET status = 'paid' WHERE id = 10",  # it never arrived
                f"UPDATE {SCHEMA}.orders SET status = 'pending' WHERE id = 11",
            ],
            False,
        ),
        ([f"UPDATE {SCHEMA}.orders SET status = 'shipped' WHERE id = 11"], None),  # cannot tell
    ],
    ids=["committed", "not-committed", "changed-since"],
)
async def test_a_stop_during_commit_is_settled_by_the_rows_the_change_wrote(
    model_server: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    meanwhile: list[str],
    applied: bool | None,
) -> None:
    state = tmp_path / "state"
    async with restarted_agent(model_server, shop_url, state) as (agent, _):
        model_server.script(
            calls(call("execute_query", {"database": STAGING, "sql": CANCEL_CUSTOMER_1}))
        )
        paused = await agent.handle_message(
            KILLED_SESSION, "cancel", requester=REQUESTER, mode=Mode.AGENT
        )
        assert isinstance(paused, AwaitingApproval)
        model_server.script(say("Done."))
        await agent.approve(paused.pending.id, approver="U0APPROVE", scope=GrantScope.ONCE)
        (ran,) = [r for r in await agent.audit.since(None) if r["outcome"] == "executing"]
        record = await agent.executions.get(ran["execution_id"])
        assert record is not None and record.undo_id is not None
        # What a stop between sending COMMIT and recording the outcome leaves behind.
        await agent.executions.committing(record.id, record.undo_id)
    await run_statements(shop_url, meanwhile)

    async with restarted_agent(model_server, shop_url, state) as (_, interrupted):
        (item,) = interrupted
        assert item.applied is applied
        if applied is None:
            assert "may or may not have been applied" in item.text
        else:
            assert ("it was applied" if applied else "it was not applied") in item.text
        assert (item.undo_id is not None) is bool(applied)


async def test_a_change_reported_while_the_journal_cannot_be_written_is_audited_all_the_same(
    model_server: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    row_11_locked: asyncmy.Connection,
) -> None:
    state = tmp_path / "state"
    await killed_while_it_runs(model_server, shop_url, state, row_11_locked)
    # The audit journal cannot be written at the restart (a directory stands in its way).
    journal = state / "audit.jsonl"
    journal.unlink(missing_ok=True)
    journal.mkdir()

    async with restarted_agent(model_server, shop_url, state) as (agent, interrupted):
        (item,) = interrupted  # reported: the journal does not stop the restart
        assert item.sql == CANCEL_11 and item.applied is False
        records = await agent.audit.since(None)
        unknown = [r for r in records if r["outcome"].startswith("outcome unknown")]
        assert [r["sql"] for r in unknown] == [CANCEL_11]  # in the store's table
        problem = await agent.audit.journal_problem()
        assert problem is not None and str(journal) in problem and "1 line(s) kept" in problem

        journal.rmdir()  # writable again: the line kept is written, once
        assert await agent.audit.journal_problem() is None
        lines = [json.loads(line) for line in journal.read_text().splitlines()]
        assert [line["sql"] for line in lines] == [CANCEL_11]
        assert lines[0]["outcome"] == unknown[0]["outcome"]
        assert await agent.recover() == []


DELETE_12 = "DELETE FROM orders WHERE id = 12"


@pytest.fixture
async def orders_locked(shop_url: str) -> AsyncIterator[asyncmy.Connection]:
    """`orders` locked for writing by the test: any read of it (an impact preview) waits."""
    connection = await connect(shop_url)
    async with connection.cursor() as cursor:
        await cursor.execute("LOCK TABLES orders WRITE")
    yield connection
    connection.close()


async def wait_until_a_read_waits_for_the_table(shop_url: str) -> None:
    sql = (
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
        f"WHERE DB = '{SCHEMA}' AND ID <> CONNECTION_ID() AND STATE LIKE '%metadata lock%'"
    )
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if (await query(shop_url, sql))[0][0]:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the impact preview never reached the server")


async def test_killed_during_the_impact_preview_the_change_was_not_run_and_its_card_comes(
    model_server: FakeModelServer,
    shop_url: str,
    tmp_path: Path,
    orders_locked: asyncmy.Connection,
) -> None:
    state = tmp_path / "state"
    model_server.script(calls(call("execute_query", {"database": STAGING, "sql": DELETE_12})))
    bot = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.agent.approve_in_subprocess",
        str(state), shop_url, model_server.url, KILLED_SESSION,
        cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    try:
        await wait_until_a_read_waits_for_the_table(shop_url)  # the preview, before any card
    finally:
        bot.send_signal(signal.SIGKILL)
        await bot.communicate()
    orders_locked.close()

    async with restarted_agent(model_server, shop_url, state) as (agent, recovered):
        # No write-ahead record: nothing was sent, so nothing "may or may not" have run; the
        # run is taken up again, and the call goes on to its card.
        assert [type(item).__name__ for item in recovered] == ["RunResumable"]
        assert recovered[0].session_id == KILLED_SESSION
        resumed = await agent.resume(KILLED_SESSION)
        assert isinstance(resumed, AwaitingApproval), resumed
        assert resumed.pending.sql == DELETE_12
        assert (await query(shop_url, f"SELECT COUNT(*) FROM {SCHEMA}.orders WHERE id = 12"))[0][
            0
        ] == 1
        records = await agent.audit.since(None)
        assert not [r for r in records if r["outcome"].startswith("outcome unknown")]
