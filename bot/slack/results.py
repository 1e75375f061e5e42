"""Query results for people: the result message (blocks/result_table.py) in the thread with
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
from typing import TypedDict

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import QueryResult
from bot.db.types import Cell
from bot.slack.blocks.result_table import DEFAULT_PREVIEW_ROWS, file_title, result_message

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


def _refused_blocks(exc: SlackApiError) -> bool:
    return exc.response.get("error") in ("invalid_blocks", "invalid_blocks_format")


async def _post_message(
    client: AsyncWebClient, channel: str, thread_ts: str, result: QueryResult, preview_rows: int
) -> None:
    """The result message alone; without its chart when Slack refuses the chart's block."""
    message = result_message(result, preview_rows)
    try:
        await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
    except SlackApiError as exc:
        if result.chart is None or not _refused_blocks(exc):
            raise
        log.warning("chart of a result in %s refused (%s): the table alone", channel, exc)
        plain = result_message(result, preview_rows, with_chart=False)
        await client.chat_postMessage(channel=channel, thread_ts=thread_ts, **plain)


class _Blocks(TypedDict, total=False):
    blocks: str  # the message, as JSON, that the file share carries


async def post_result(
    client: AsyncWebClient,
    channel: str,
    thread_ts: str,
    result: QueryResult,
    preview_rows: int = DEFAULT_PREVIEW_ROWS,
) -> None:
    """One message in the thread: the result's summary, chart, table and SQL, with the
    rows attached as CSV (the file share carries the message as its blocks). A result
    without rows is just the message. When the file share refuses those blocks, the
    message is posted on its own and the file after it."""
    if not result.rows:
        await _post_message(client, channel, thread_ts, result, preview_rows)
        return
    content, filename, title = to_csv(result), csv_filename(result), file_title(result)

    async def upload(blocks: str | None = None) -> None:
        shown: _Blocks = {} if blocks is None else {"blocks": blocks}  # none: the file alone
        await client.files_upload_v2(
            channel=channel,
            thread_ts=thread_ts,
            content=content,
            filename=filename,
            title=title,
            snippet_type="csv",
            **shown,
        )

    message = result_message(result, preview_rows)
    try:
        await upload(json.dumps(message["blocks"]))
    except SlackApiError as exc:
        if not _refused_blocks(exc):
            raise
        await _post_message(client, channel, thread_ts, result, preview_rows)
        await upload()
