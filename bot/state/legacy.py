"""The state file of earlier versions (`dbagent.sqlite`: one key-value table per kind, JSON
values) is imported once into the new schema, so an upgrade keeps its pending approvals,
grants, sessions and audit log. The old file is then renamed, kept as a backup."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LEGACY_FILE = "dbagent.sqlite"
IMPORTED_SUFFIX = ".imported"


def _rows(legacy: sqlite3.Connection, table: str) -> Iterator[tuple[str, Any]]:
    names = {row[0] for row in legacy.execute("SELECT name FROM sqlite_master")}
    if table not in names:
        return
    for key, value in legacy.execute(f'SELECT key, value FROM "{table}" ORDER BY key'):
        with contextlib.suppress(ValueError, TypeError):  # an unreadable row stays behind
            yield str(key), json.loads(value)


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _import(legacy: sqlite3.Connection, target: sqlite3.Connection) -> int:
    count = 0
    for key, data in _rows(legacy, "sessions"):
        if isinstance(data, dict):
            target.execute(
                # Whole, the history inside (version NULL), as sessions.py reads old records.
                "INSERT OR REPLACE INTO sessions (id, status, updated_at, data) "
                "VALUES (?, ?, ?, ?)",
                (
                    key,
                    str(data.get("status") or ""),
                    _number(data.get("updated_at"), 0.0),
                    json.dumps({**data, "id": key}),
                ),
            )
            count += 1
    for old, new in (("pending", "pending"), ("questions", "questions"), ("answers", "proposals")):
        for key, data in _rows(legacy, old):
            if isinstance(data, dict):
                target.execute(
                    f"INSERT OR REPLACE INTO {new} VALUES (?, ?, ?)",
                    (key, _number(data.get("created_at"), 0.0), json.dumps({**data, "id": key})),
                )
                count += 1
    for key, grant in _rows(legacy, "grants"):
        if isinstance(grant, dict) and {"binding", "scope", "expires_at"} <= set(grant):
            target.execute(
                "INSERT OR REPLACE INTO grants (id, binding, scope, expires_at, held, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    grant["binding"],
                    grant["scope"],
                    _number(grant["expires_at"], 0.0),
                    int(bool(grant.get("held"))),
                    json.dumps(grant),
                ),
            )
            count += 1
    for _, entry in _rows(legacy, "audit"):  # keys sort by time
        if isinstance(entry, dict):
            try:
                at = datetime.fromisoformat(str(entry.get("time"))).timestamp()
            except ValueError:
                at = 0.0
            target.execute("INSERT INTO audit (time, data) VALUES (?, ?)", (at, json.dumps(entry)))
            count += 1
    for key, seen in _rows(legacy, "seen_events"):
        target.execute(
            "INSERT OR REPLACE INTO seen_events VALUES (?, ?)", (key, _number(seen, 0.0))
        )
        count += 1
    return count


def import_legacy(directory: Path, target: sqlite3.Connection) -> None:
    """Import `dbagent.sqlite` from `directory` when there is one; one transaction."""
    path = directory / LEGACY_FILE
    if not path.exists():
        return
    legacy = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        target.execute("BEGIN IMMEDIATE")
        try:
            count = _import(legacy, target)
            target.execute("COMMIT")
        except BaseException:
            target.execute("ROLLBACK")
            raise
    finally:
        legacy.close()
    path.rename(path.with_name(LEGACY_FILE + IMPORTED_SUFFIX))
    for extra in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            path.with_name(LEGACY_FILE + extra).unlink()
    log.info("imported %d records from %s (kept as %s%s)", count, path, path.name, IMPORTED_SUFFIX)
