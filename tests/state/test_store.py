"""The state store keeps JSON, never pickle, and refuses to guess about a broken file."""

from __future__ import annotations

import asyncio
import pickle
import sqlite3

import pytest

from bot.state.store import STATE_FILE, StateError, StateStore


async def test_values_survive_a_reopen(tmp_path):
    store = await StateStore.open(tmp_path)
    await store.put("sessions", "T:C:1", {"status": "idle", "messages": [1, "two", None]})
    await store.close()
    reopened = await StateStore.open(tmp_path)
    assert await reopened.get("sessions", "T:C:1") == {
        "status": "idle",
        "messages": [1, "two", None],
    }
    await reopened.close()


async def test_values_are_stored_as_json_text_not_pickle(tmp_path):
    store = await StateStore.open(tmp_path)
    await store.put("pending", "p1", {"sql": "DELETE FROM t"})
    await store.close()
    connection = sqlite3.connect(tmp_path / STATE_FILE)
    (raw,) = connection.execute("SELECT value FROM pending WHERE key = 'p1'").fetchone()
    connection.close()
    assert raw == '{"sql":"DELETE FROM t"}'


async def test_a_pickled_value_is_refused_not_unpickled(tmp_path):
    store = await StateStore.open(tmp_path)
    await store.put("sessions", "s", {"ok": True})
    await store.close()

    class Boom:
        def __reduce__(self):
            return (print, ("pickle ran",))

    connection = sqlite3.connect(tmp_path / STATE_FILE)
    connection.execute(
        "UPDATE sessions SET value = ? WHERE key = 's'", (sqlite3.Binary(pickle.dumps(Boom())),)
    )
    connection.commit()
    connection.close()
    reopened = await StateStore.open(tmp_path)
    with pytest.raises(StateError, match=r"dbagent\.sqlite.*corrupt"):
        await reopened.get("sessions", "s")
    await reopened.close()


async def test_a_corrupt_file_names_the_file_and_is_left_alone(tmp_path):
    path = tmp_path / STATE_FILE
    garbage = b"this is not a sqlite database at all" * 100
    path.write_bytes(garbage)
    with pytest.raises(StateError, match=str(path)):
        await StateStore.open(tmp_path)
    assert path.read_bytes() == garbage, "a broken state file must never be silently replaced"


async def test_add_if_absent_lets_exactly_one_racer_win(store):
    results = await asyncio.gather(
        *(store.add_if_absent("seen_events", "Ev1", {"n": n}) for n in range(20))
    )
    assert results.count(True) == 1


async def test_delete_returns_the_value_once(store):
    await store.put("pending", "p", {"x": 1})
    assert await store.delete("pending", "p") == {"x": 1}
    assert await store.delete("pending", "p") is None


async def test_an_unknown_table_is_an_error(store):
    with pytest.raises(StateError, match="no table"):
        await store.get("nope", "k")
