"""Query results for people: the preview (blocks/result_preview.py) in the thread with
every row attached as CSV — the rows the agent fetched, exactly, marked as truncated when
the statement had more.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from datetime import UTC, datetime

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import QueryResult
from bot.db.types import Cell
from bot.slack.blocks.result_preview import preview_message, title

log = logging.getLogger(__name__)

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
# Spreadsheets run cells that start with these as formulas (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(cell: Cell) -> str | int | float:
    if cell is None:
        return ""
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, str) and cell.startswith(_FORMULA_START) and not _NUMBER.match(cell):
        return "'" + cell
    return cell


def to_csv(result: QueryResult) -> str:
    """The rows as CSV with a header line. NULL is an empty field; text that a spreadsheet
    would run as a formula gets a leading apostrophe."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(result.columns)
    for row in result.rows:
        writer.writerow([_csv_cell(cell) for cell in row])
    return buffer.getvalue()


def csv_filename(result: QueryResult, now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", result.database)
    return f"{safe}-{stamp}.csv"


async def post_result(
    client: AsyncWebClient, channel: str, thread_ts: str, result: QueryResult
) -> None:
    """One message in the thread: the preview table, with the rows attached as CSV (the
    file share carries the preview as its blocks). A result without rows is just the
    preview."""
    preview = preview_message(result)
    if not result.rows:
        await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **preview)
        return
    await client.files_upload_v2(
        channel=channel,
        thread_ts=thread_ts,
        content=to_csv(result),
        filename=csv_filename(result),
        title=title(result),
        snippet_type="csv",
        blocks=json.dumps(preview["blocks"]),
    )
