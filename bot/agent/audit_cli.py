"""`python -m bot audit [--since ISO|1h|2d] [--json] [--state-dir DIR]`: the audit log as a
table, or as JSON lines for other tools."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from bot.config import Settings
from bot.state import StateError, open_state
from bot.visible import visible

_RELATIVE = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
COLUMNS = ("time", "session", "requester", "approver", "database", "risk", "outcome", "rows", "sql")


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """'1h', '2d', '30m', '1w' back from now, or an ISO date/time (UTC unless it says)."""
    match = _RELATIVE.match(text)
    if match:
        amount, unit = int(match.group(1)), _UNITS[match.group(2)]
        return (now or datetime.now(UTC)) - timedelta(**{unit: amount})
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r}: use an ISO time (2024-05-01T09:00) or 1h, 2d"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _cell(record: dict[str, Any], column: str) -> str:
    if column == "session":
        value = record.get("session_id")
    elif column == "time":
        value = (record.get("time") or "")[:19].replace("T", " ")
    elif column == "outcome":
        value = record.get("outcome")
        if record.get("error"):
            value = f"{value}: {record['error']}"
    else:
        value = record.get(column)
    # visible() first: split() would turn a carriage return into a blank, hiding it, and an
    # ANSI escape would reach the terminal.
    text = "" if value is None else " ".join(visible(str(value)).split())
    limit = 60 if column in ("sql", "outcome") else 32
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_table(records: Sequence[dict[str, Any]]) -> str:
    rows = [[_cell(record, column) for column in COLUMNS] for record in records]
    widths = [max([len(c)] + [len(row[i]) for row in rows]) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip()]
    lines += [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bot audit", description=__doc__)
    parser.add_argument("--since", help="ISO time, or 30m, 1h, 2d, 1w back from now")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path(os.environ.get("DBAGENT_STATE_DIR") or "state"),
        help="state directory (default: $DBAGENT_STATE_DIR or ./state)",
    )
    return parser


async def audit_main(argv: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage
        return int(exc.code or 0)
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as exc:
        print(f"dbagent: {exc}", file=sys.stderr)
        return 2
    # DBAGENT_STATE_URL still applies. Read-only and without the embedded directory's
    # lock: the bot may be serving from it meanwhile.
    settings = Settings(dbagent_state_dir=args.state_dir, databases=[])
    try:
        state = await open_state(settings, read_only=True)
    except StateError as exc:
        print(f"dbagent: {exc}", file=sys.stderr)
        return 2
    try:
        records = await state.audit.since(since)
    finally:
        await state.close()
    try:
        if args.json:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        elif records:
            out.write(render_table(records) + "\n")
        else:
            out.write("no audit records" + (f" since {since.isoformat()}" if since else "") + "\n")
        out.flush()
    except BrokenPipeError:  # the reader had enough (`dbagent audit --json | head`)
        _quiet_stdout(out)
    return 0


def _quiet_stdout(out: TextIO) -> None:
    """Stdout's reader is gone: what is left unwritten goes nowhere, so that Python's own
    flush at exit does not fail again with a traceback."""
    try:
        descriptor = out.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)
