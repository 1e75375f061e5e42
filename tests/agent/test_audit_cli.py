"""`python -m bot audit`: the audit log as a table or JSON lines."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.agent.audit_cli import audit_main, parse_since
from bot.config import Settings
from bot.state import open_state

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1h", NOW - timedelta(hours=1)),
        ("2d", NOW - timedelta(days=2)),
        ("30m", NOW - timedelta(minutes=30)),
        ("1w", NOW - timedelta(weeks=1)),
        ("2024-04-30T08:00", datetime(2024, 4, 30, 8, 0, tzinfo=UTC)),
        ("2024-04-30T08:00+02:00", datetime(2024, 4, 30, 6, 0, tzinfo=UTC)),
    ],
)
def test_since_takes_a_relative_age_or_an_iso_time(text: str, expected: datetime) -> None:
    assert parse_since(text, now=NOW) == expected


def test_since_rejects_anything_else_with_a_hint() -> None:
    with pytest.raises(ValueError, match="use an ISO time"):
        parse_since("yesterday")


async def state_with_records(directory: Path) -> None:
    clock = [datetime.now(UTC).timestamp()]
    state = await open_state(
        Settings(dbagent_state_dir=directory, databases=[]), clock=lambda: clock[0]
    )
    audit = state.audit
    common = {"session_id": "T:C:1", "requester": "U0ADA", "database": "shop-staging"}
    await audit.record(
        **common,
        approver="U0BOSS",
        environment="staging",
        risk="write",
        sql="UPDATE orders\n SET status = 'x' WHERE id = 1",
        outcome="executed",
        rows=1,
        duration_ms=3.2,
    )
    await audit.record(
        **common,
        approver=None,
        environment="production",
        risk="write",
        sql="DELETE FROM orders",
        outcome="refused",
        error="Blocked: writes on production",
    )
    clock[0] = datetime(2020, 1, 1, tzinfo=UTC).timestamp()
    await audit.record(
        **common,
        approver=None,
        environment="staging",
        risk="write",
        sql="DELETE FROM old",
        outcome="executed",
    )
    await state.close()


async def test_records_print_as_a_table_one_line_each(tmp_path: Path) -> None:
    await state_with_records(tmp_path)
    out = io.StringIO()
    assert await audit_main(["--state-dir", str(tmp_path)], out=out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split() == [
        "time",
        "session",
        "requester",
        "approver",
        "database",
        "risk",
        "outcome",
        "rows",
        "sql",
    ]
    assert len(lines) == 4
    assert "UPDATE orders SET status = 'x' WHERE id = 1" in lines[2]
    assert "refused: Blocked: writes on production" in lines[3]


async def test_records_print_as_json_lines_and_since_filters_old_ones(tmp_path: Path) -> None:
    await state_with_records(tmp_path)
    out = io.StringIO()
    assert await audit_main(["--state-dir", str(tmp_path), "--json", "--since", "1d"], out=out) == 0
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["outcome"] for r in records] == ["executed", "refused"]
    assert records[0]["approver"] == "U0BOSS" and records[0]["rows"] == 1


async def test_a_missing_state_directory_is_an_error_not_a_new_empty_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await audit_main(["--state-dir", str(tmp_path / "nowhere")]) == 2
    assert "no state in" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


async def test_a_bad_since_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await state_with_records(tmp_path)
    assert await audit_main(["--state-dir", str(tmp_path), "--since", "soon"]) == 2
    assert "--since 'soon'" in capsys.readouterr().err


async def test_the_table_shows_control_characters_in_sql_and_errors_visibly(
    tmp_path: Path,
) -> None:
    store = await open_state(Settings(dbagent_state_dir=tmp_path, databases=[]))
    await store.audit.record(
        session_id="T:C:2",
        requester="U0ADA",
        database="shop-staging",
        approver="U0BOSS",
        environment="staging",
        risk="write",
        sql="DELETE FROM orders WHERE id = 1 OR 1=1 -- \r\x1b[2KDELETE FROM orders WHERE id = 1",
        outcome="error",
        error="bad\u202evalue",
    )
    await store.close()
    out = io.StringIO()
    assert await audit_main(["--state-dir", str(tmp_path)], out=out) == 0
    printed = out.getvalue()
    assert "\r" not in printed and "\x1b" not in printed and "\u202e" not in printed
    assert "OR 1=1 -- <U+000D><U+001B>[" in printed
    assert "bad<U+202E>value" in printed


@pytest.mark.parametrize("output", [["--json"], []], ids=["json lines", "the table"])
async def test_a_reader_that_stops_early_leaves_no_traceback(
    tmp_path: Path, output: list[str]
) -> None:
    # `dbagent audit --json | head -1`: more than a pipe holds, and the reader goes at once.
    state = await open_state(Settings(dbagent_state_dir=tmp_path, databases=[]))
    for number in range(1_500):
        await state.audit.record(
            session_id="T:C:1",
            requester="U0ADA",
            approver="U0BOSS",
            database="shop-staging",
            environment="staging",
            risk="write",
            sql=f"UPDATE orders SET note = '{'x' * 100}' WHERE id = {number}",
            outcome="executed",
            rows=1,
        )
    await state.close()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "audit", "--state-dir", str(tmp_path), *output,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = await process.stdout.readline()
    assert first
    process.stdout.feed_eof()
    transport = process._transport  # type: ignore[attr-defined]
    transport.get_pipe_transport(1).close()  # the reader is gone
    errors = await process.stderr.read()
    assert await process.wait() == 0
    assert b"Traceback" not in errors and b"BrokenPipe" not in errors, errors.decode()
