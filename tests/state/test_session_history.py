"""A session's history through the agent's sessions, on both backends: a save stores what
changed (so its cost does not grow with the thread), and what loads is what was saved, also
when two writers (two processes on Redis) or an edit in place get in the way."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.agent.sessions import Session, Sessions
from bot.config import Mode, Settings
from bot.state import State, open_state
from bot.state.sqlite_db import SqliteDb
from tests.state.conftest import Clock, OpenState
from tests.state.meter import Meter, relayed, sqlite_meter

RESULT = json.dumps({"rows": [[n, "x" * 60] for n in range(40)]})  # a ~3 KB tool result


def exchange(n: int) -> list[dict[str, Any]]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "q", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"question {n}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": RESULT},
        {"role": "assistant", "content": f"answer {n}"},
    ]


def thread(session_id: str, exchanges: int) -> Session:
    messages = [m for n in range(exchanges) for m in exchange(n)]
    return Session(id=session_id, mode=Mode.AGENT, messages=messages)


async def stored_messages(state: State, session_id: str) -> list[dict[str, Any]]:
    record = await state.sessions.get(session_id)
    assert record is not None
    return list(record["messages"])


@pytest.fixture
async def metered(
    backend: tuple[str | None, str], tmp_path: Path, clock: Clock
) -> AsyncIterator[tuple[State, Meter]]:
    """A store of this test's backend, and the bytes it has been sent so far."""
    url, prefix = backend
    settings: dict[str, Any] = {"dbagent_state_dir": tmp_path / "state", "databases": []}
    if url is None:
        state = await open_state(Settings(**settings), clock=clock)
        try:
            assert isinstance(state.backend, SqliteDb)
            yield state, await sqlite_meter(state.backend)
        finally:
            await state.close()
        return
    async with relayed(url) as (through, relay):
        state = await open_state(
            Settings(**settings, dbagent_state_url=through), redis_prefix=prefix, clock=clock
        )

        try:
            yield state, lambda: relay.sent
        finally:
            await state.close()


async def test_a_save_in_a_long_thread_writes_what_changed_not_the_whole_history(
    metered: tuple[State, Meter],
) -> None:
    state, sent = metered
    sessions = Sessions(state.sessions)
    per_save: dict[int, int] = {}
    whole: dict[int, int] = {}
    for exchanges in (10, 500):
        session = thread(f"T:C:{exchanges}", exchanges)
        before = sent()
        await sessions.save(session)  # new here: stored whole
        whole[exchanges] = sent() - before
        session.messages += exchange(exchanges)
        before = sent()
        await sessions.save(session)
        per_save[exchanges] = sent() - before
        assert await stored_messages(state, session.id) == session.messages
    assert whole[500] > 20 * whole[10]  # what saving the whole history would cost
    assert per_save[500] < 2 * per_save[10], per_save
    assert per_save[500] < whole[500] / 50, (per_save, whole)


async def test_what_fitting_drops_and_shrinks_is_what_loads(state: State) -> None:
    sessions = Sessions(state.sessions)
    await sessions.save(thread("T:C:1", 30))
    session = await sessions.load("T:C:1")
    assert session is not None
    del session.messages[:80]  # fitting dropped the oldest twenty exchanges
    session.messages[2] = {**session.messages[2], "content": "shrunk"}  # and shrank one
    session.messages += exchange(30)
    await sessions.save(session)
    assert await stored_messages(state, "T:C:1") == session.messages
    again = await Sessions(state.sessions).load("T:C:1")  # another process, nothing kept
    assert again == session


async def test_a_message_changed_in_place_is_saved_too(state: State) -> None:
    sessions = Sessions(state.sessions)
    await sessions.save(thread("T:C:1", 3))
    session = await sessions.load("T:C:1")
    assert session is not None
    session.messages[2]["content"] = "edited where it stood"
    await sessions.save(session)
    assert (await stored_messages(state, "T:C:1"))[2]["content"] == "edited where it stood"


async def test_a_kept_history_changed_in_place_after_its_save_is_read_again(
    state: State,
) -> None:
    sessions = Sessions(state.sessions)
    session = thread("T:C:1", 3)
    await sessions.save(session)
    session.messages[0]["content"] = "never saved"
    loaded = await sessions.load("T:C:1")
    assert loaded is not None and loaded.messages[0]["content"] == "question 0"


async def test_a_load_sees_another_writers_save(open_backend: OpenState) -> None:
    """Two processes on Redis (two sessions objects on one store here): each keeps what it
    loaded, and a save by the other is seen at the next load."""
    state = await open_backend()
    first, second = Sessions(state.sessions), Sessions(state.sessions)
    await first.save(thread("T:C:1", 2))
    assert await first.load("T:C:1") is not None  # kept by `first`
    theirs = await second.load("T:C:1")
    assert theirs is not None
    theirs.messages += exchange(2)
    await second.save(theirs)
    mine = await first.load("T:C:1")
    assert mine is not None and mine.messages == theirs.messages


async def test_a_writer_that_missed_a_save_stores_its_session_whole(state: State) -> None:
    """No mix of two histories: the last writer's session is what is stored, as when every
    save stored it whole."""
    first, second = Sessions(state.sessions), Sessions(state.sessions)
    await first.save(thread("T:C:1", 2))
    stale = await first.load("T:C:1")
    theirs = await second.load("T:C:1")
    assert stale is not None and theirs is not None
    del theirs.messages[:4]
    theirs.messages += exchange(7)
    await second.save(theirs)
    stale.messages += exchange(2)
    await first.save(stale)
    assert await stored_messages(state, "T:C:1") == stale.messages
    assert await Sessions(state.sessions).load("T:C:1") == stale
