"""The embedded store: private files, one process per directory, loud failures that heal."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import Settings
from bot.state import StateError, StateLocked, open_state
from bot.state.sqlite_db import LOCK_FILE, STATE_FILE
from tests.state.disk import fill, small_disk


def settings(directory: Path) -> Settings:
    return Settings(dbagent_state_dir=directory, databases=[])


def session(session_id: str, payload: str = "") -> dict[str, object]:
    return {"id": session_id, "status": "idle", "updated_at": 1.0, "messages": [payload]}


async def test_the_directory_and_its_files_are_for_the_owner_only(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path / "state"))
    await state.sessions.save(session("s"))
    await state.close()
    directory = tmp_path / "state"
    assert directory.stat().st_mode & 0o777 == 0o700
    for name in (STATE_FILE, LOCK_FILE, f"{STATE_FILE}-wal", f"{STATE_FILE}-shm"):
        if (directory / name).exists():
            assert (directory / name).stat().st_mode & 0o777 == 0o600, name


async def test_records_are_json_text_in_a_real_schema(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path))
    await state.sessions.save({**session("s"), "status": "running"})
    await state.close()
    connection = sqlite3.connect(tmp_path / STATE_FILE)
    row = connection.execute("SELECT status, data FROM sessions WHERE id = 's'").fetchone()
    history = connection.execute(
        "SELECT position, data FROM session_messages WHERE session_id = 's'"
    ).fetchall()
    (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
    connection.close()
    assert row[0] == "running" and json.loads(row[1])["id"] == "s"
    assert [(position, json.loads(data)) for position, data in history] == [(0, "")]
    assert mode == "wal"


async def test_a_record_that_is_not_json_is_refused_with_its_name(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path))
    await state.sessions.save(session("s"))
    await state.close()
    connection = sqlite3.connect(tmp_path / STATE_FILE)
    connection.execute("UPDATE sessions SET data = ? WHERE id = 's'", (b"\x80\x04pickle",))
    connection.commit()
    connection.close()
    state = await open_state(settings(tmp_path))
    with pytest.raises(StateError, match="sessions/s is corrupt"):
        await state.sessions.get("s")
    await state.close()


async def test_a_file_that_is_not_a_database_fails_at_start(tmp_path: Path) -> None:
    (tmp_path / STATE_FILE).write_bytes(b"not a database at all, just some text" * 100)
    with pytest.raises(StateError, match="cannot be opened"):
        await open_state(settings(tmp_path))


async def test_a_second_opener_in_this_process_is_refused(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path))
    with pytest.raises(StateLocked, match=f"pid {os.getpid()}"):
        await open_state(settings(tmp_path))
    await state.close()
    await (await open_state(settings(tmp_path))).close()  # free again once closed


OPEN_IN_ANOTHER_PROCESS = """
import asyncio, sys
from bot.__main__ import main
sys.exit(main(["audit", "--state-dir", sys.argv[1]]))
"""


def test_a_second_process_refuses_to_start_and_names_the_first(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        second = subprocess.run(
            [sys.executable, "-c", OPEN_AND_WRITE, str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        holder.terminate()
        holder.wait(timeout=30)
    assert second.returncode == 2
    (line,) = second.stderr.strip().splitlines()
    assert line.startswith("dbagent: state directory") and f"pid {holder.pid}" in line


HOLD = """
import asyncio, sys
from bot.config import Settings
from bot.state import open_state

async def main():
    state = await open_state(Settings(dbagent_state_dir=sys.argv[1], databases=[]))
    print("holding", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

OPEN_AND_WRITE = """
import asyncio, sys
from bot.config import Settings
from bot.state import StateError, open_state

async def main():
    try:
        await open_state(Settings(dbagent_state_dir=sys.argv[1], databases=[]))
    except StateError as exc:
        print(f"dbagent: {exc}", file=sys.stderr)
        return 2
    return 0

sys.exit(asyncio.run(main()))
"""


async def test_the_audit_command_reads_beside_the_serving_process(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path))
    await state.audit.record(
        session_id="s",
        requester="U1",
        approver=None,
        database="d",
        environment="staging",
        risk="read_only",
        sql="SELECT 1",
        outcome="executed",
    )
    reader = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        OPEN_IN_ANOTHER_PROCESS,
        str(tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await reader.communicate()
    await state.close()
    assert reader.returncode == 0, err.decode()
    assert "SELECT 1" in out.decode()


# -- a full disk: a real one (a small tmpfs), and a file size limit where mounting is not
# allowed. Either way the failed write raises, /health can see it, and writes work again
# once space is back, without a restart.


async def test_a_full_disk_fails_the_write_loudly_and_heals_when_space_is_back(
    tmp_path: Path,
) -> None:
    with small_disk(tmp_path / "disk") as disk:
        state = await open_state(settings(disk / "state"))
        await state.sessions.save(session("before"))
        ballast = fill(disk)
        with pytest.raises(StateError, match="full"):
            for n in range(50):  # the WAL may still hold a few pages
                await state.sessions.save(session(f"s{n}", "x" * 20_000))
        assert not state.healthy and "full" in (state.last_error or "")
        assert await state.sessions.get("before") == session("before")  # reads go on

        ballast.unlink()
        await state.sessions.save(session("after", "x" * 20_000))
        assert state.healthy and state.last_error is None
        assert await state.sessions.exists("after")
        await asyncio.wait_for(state.close(), 10)  # the worker is alive: shutdown works


FILL_UNDER_A_SIZE_LIMIT = """
import asyncio, json, resource, signal, sys
from bot.config import Settings
from bot.state import StateError, open_state

def record(name, size):
    return {"id": name, "status": "idle", "updated_at": 1.0, "messages": ["x" * size]}

async def main():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
    state = await open_state(Settings(dbagent_state_dir=sys.argv[1], databases=[]))
    await state.sessions.save(record("before", 10))
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, hard))
    report = {"error": None}
    for n in range(100):
        try:
            await state.sessions.save(record(f"s{n}", 50_000))
        except StateError as exc:
            report["error"] = str(exc)
            break
    report["healthy_while_full"] = state.healthy
    report["reads_while_full"] = await state.sessions.exists("before")
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    await state.sessions.save(record("after", 50_000))
    report["healthy_after"] = state.healthy
    report["stored_after"] = await state.sessions.exists("after")
    await asyncio.wait_for(state.close(), 10)
    print(json.dumps(report))

asyncio.run(main())
"""


def test_a_file_size_limit_fails_the_write_loudly_and_heals_when_lifted(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FILL_UNDER_A_SIZE_LIMIT, str(tmp_path / "state")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["error"] and "cannot be written" in report["error"], report
    assert report["healthy_while_full"] is False
    assert report["reads_while_full"] is True
    assert report["healthy_after"] is True and report["stored_after"] is True


async def test_an_earlier_versions_state_file_is_imported_once(tmp_path: Path) -> None:
    legacy = sqlite3.connect(tmp_path / "dbagent.sqlite")
    rows = {
        "sessions": [("T:C:1", {"id": "T:C:1", "status": "awaiting_approval", "updated_at": 5.0})],
        "pending": [("p1", {"id": "p1", "created_at": 1e10, "sql": "DELETE FROM t"})],
        "answers": [("a1", {"sql": "SELECT 1", "created_at": 1e10})],
        "audit": [("0001-x", {"time": "2024-05-01T00:00:00.000+00:00", "sql": "SELECT 1"})],
        "seen_events": [("event:E1", 1e10)],
    }
    for table, values in rows.items():
        legacy.execute(f'CREATE TABLE "{table}" (key TEXT PRIMARY KEY, value BLOB)')
        legacy.executemany(
            f'INSERT INTO "{table}" VALUES (?, ?)', [(k, json.dumps(v)) for k, v in values]
        )
    legacy.commit()
    legacy.close()

    state = await open_state(settings(tmp_path))
    assert (await state.sessions.get("T:C:1"))["status"] == "awaiting_approval"
    assert (await state.pending.claim("p1"))["sql"] == "DELETE FROM t"
    assert (await state.proposals.get("a1"))["id"] == "a1"
    assert [r["sql"] for r in await state.audit.since(None)] == ["SELECT 1"]
    assert not await state.seen_events.claim("event:E1")
    await state.close()
    assert not (tmp_path / "dbagent.sqlite").exists()
    assert (tmp_path / "dbagent.sqlite.imported").exists()
    state = await open_state(settings(tmp_path))  # once: nothing comes back
    assert await state.pending.get("p1") is None
    await state.close()


async def test_a_state_file_of_the_first_schema_opens_and_its_sessions_load(
    tmp_path: Path,
) -> None:
    """The first schema stored each session whole, history inside, in a table without the
    `version` column: the column is added at open, and the sessions load as they were."""
    whole = {"id": "T:C:1", "status": "idle", "updated_at": 5.0, "messages": ["a", "b"]}
    old = sqlite3.connect(tmp_path / STATE_FILE)
    old.executescript(
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, status TEXT NOT NULL, "
        "updated_at REAL NOT NULL, data TEXT NOT NULL); PRAGMA user_version = 1;"
    )
    old.execute(
        "INSERT INTO sessions VALUES (?, ?, ?, ?)", ("T:C:1", "idle", 5.0, json.dumps(whole))
    )
    old.commit()
    old.close()

    state = await open_state(settings(tmp_path))
    assert await state.sessions.get("T:C:1") == whole
    await state.sessions.save({**whole, "messages": ["a", "b", "c"]})
    await state.close()
    state = await open_state(settings(tmp_path))  # opened again: nothing left to add
    assert await state.sessions.get("T:C:1") == {**whole, "messages": ["a", "b", "c"]}
    await state.close()


async def test_a_pruned_session_leaves_no_row_of_its_history(tmp_path: Path) -> None:
    state = await open_state(settings(tmp_path))
    await state.sessions.save({**session("old", "x"), "updated_at": 1.0})
    await state.sessions.save({**session("new", "y"), "updated_at": 2e10})
    assert await state.sessions.prune(idle_since=1e10, limit=10) == 1
    await state.close()
    connection = sqlite3.connect(tmp_path / STATE_FILE)
    left = connection.execute("SELECT DISTINCT session_id FROM session_messages").fetchall()
    connection.close()
    assert left == [("new",)]
