"""Posting in a thread: messages, the model's text, results, files, errors, updates.

Posting never raises: a failure to post is logged, and a plainer form or a short note is
tried in its place, so one bad upload cannot swallow the answer it belongs to. How a run's
outcome as a whole is posted is outcome.py; approval cards are cards.py.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import (
    QueryResult,
)
from bot.slack import results, strings
from bot.slack.blocks import answer
from bot.slack.blocks.common import context
from bot.slack.blocks.messages import answer_message, error_message
from bot.slack.blocks.result_table import DEFAULT_PREVIEW_ROWS, result_message
from bot.slack.sessions import Thread

if TYPE_CHECKING:
    from bot.slack.proposals import Proposals

log = logging.getLogger(__name__)

SLACK_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)
# Results posted per answer; more would bury the thread (the model saw them all).
MAX_RESULTS = 10
MAX_ANSWER_CHARS = 12_000  # the default of [slack] max_answer_chars
MAX_ANSWER_MESSAGES = 3  # an answer that needs more is its first part and a file
LONG_ANSWER_FIRST_CHARS = 3_000  # the part of a long answer shown as a message
# Errors about what a message holds: a plainer form of the same message may go through.
CONTENT_ERRORS = frozenset(
    {
        "msg_too_long",
        "msg_blocks_too_long",
        "invalid_blocks",
        "invalid_blocks_format",
        "invalid_attachments",
        "too_many_attachments",
        "markdown_text_conflict",
    }
)
UNEXPECTED = "Sorry, something went wrong while answering; the details are in the bot's log."


async def post(client: AsyncWebClient, thread: Thread, message: dict[str, Any]) -> str | None:
    """Post in the thread; returns the message's ts, or None when it could not be posted
    as a message. A message Slack refuses for its content (too long, blocks it will not
    take) is posted plainer: its text alone, then the text as a file."""
    try:
        return await _post_message(client, thread, message)
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error not in CONTENT_ERRORS:
            log.error("posting in %s failed: %s", thread.session_id, exc)
            return None
        log.warning("Slack refused a message in %s (%s); posting it plainer", thread, error)
    text = str(message.get("text") or "")
    if message.get("blocks") and text.strip():
        try:
            return await _post_message(client, thread, {"text": text})
        except SLACK_ERRORS as exc:
            log.warning("the text alone was refused too in %s: %s", thread, exc)
    await post_file(client, thread, text, title=strings.REFUSED_MESSAGE_FILE)
    return None


async def post_exactly(
    client: AsyncWebClient, thread: Thread, message: dict[str, Any]
) -> tuple[str | None, str | None]:
    """Post the message as it is, or not at all: (its ts, None), or (None, Slack's error).
    For messages whose blocks are the point (an approval card without its buttons would
    wait for a click nobody can give)."""
    try:
        return await _post_message(client, thread, message), None
    except SlackApiError as exc:
        error = str(exc.response.get("error") or exc)
    except SLACK_ERRORS as exc:
        error = str(exc) or type(exc).__name__
    log.error("Slack refused a message in %s: %s", thread.session_id, error)
    return None, error


async def _post_message(client: AsyncWebClient, thread: Thread, message: dict[str, Any]) -> str:
    response = await client.chat_postMessage(
        channel=thread.channel, thread_ts=thread.thread_ts, **message
    )
    return str(response.get("ts") or "")


async def post_file(
    client: AsyncWebClient, thread: Thread, text: str, *, title: str, filename: str = "answer.md"
) -> bool:
    """`text` as a file shared in the thread; False (logged) when Slack refused it."""
    try:
        await client.files_upload_v2(
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            content=text or " ",
            filename=filename,
            title=title,
        )
    except SLACK_ERRORS as exc:
        log.error("file %s not shared in %s: %s", filename, thread.session_id, exc)
        return False
    return True


async def update(client: AsyncWebClient, channel: str, ts: str, message: dict[str, Any]) -> bool:
    """Replace a message the bot posted (Slack's transient failures are retried by the
    client; blocks Slack refuses fall back to the text alone); False (logged) when it
    could not be updated."""
    try:
        await client.chat_update(channel=channel, ts=ts, **message)
        return True
    except SlackApiError as exc:
        refused_content = exc.response.get("error") in CONTENT_ERRORS
        if not (refused_content and message.get("blocks")):
            log.warning("message %s in %s not updated: %s", ts, channel, exc)
            return False
    except SLACK_ERRORS as exc:
        log.warning("message %s in %s not updated: %s", ts, channel, exc)
        return False
    try:
        await client.chat_update(channel=channel, ts=ts, text=message.get("text") or "", blocks=[])
        return True
    except SLACK_ERRORS as exc:
        log.warning("message %s in %s not updated, even as text: %s", ts, channel, exc)
        return False


async def post_text(
    client: AsyncWebClient,
    thread: Thread,
    text: str,
    proposals: Proposals | None = None,
    *,
    max_chars: int = MAX_ANSWER_CHARS,
) -> bool:
    """Post the model's text as safe mrkdwn, split to fit; False when a piece failed.
    With `proposals`, every SQL block the text proposes gets Run / Edit & run buttons.

    An answer longer than `max_chars`, or one that would take more than
    `MAX_ANSWER_MESSAGES` messages, is its first part and the whole text as a file: a
    long answer must not bury the thread (or hold it for the minutes posting takes)."""
    if len(text) > max_chars:
        return await _post_long_text(client, thread, text)
    messages = None
    if proposals is not None:
        try:
            messages = await proposals.messages(thread, text)
        except Exception:
            # The answer matters more than its buttons: post it plain.
            log.exception("buttons for the SQL of an answer in %s failed", thread.session_id)
    if messages is None:
        messages = [answer.answer_message(piece) for piece in answer.answer_pieces(text)]
    if len(messages) > MAX_ANSWER_MESSAGES:
        return await _post_long_text(client, thread, text)
    posted = True
    for message in messages:
        if await post(client, thread, message) is None:
            posted = False
    return posted


async def _post_long_text(client: AsyncWebClient, thread: Thread, text: str) -> bool:
    first = answer.answer_pieces(text, LONG_ANSWER_FIRST_CHARS)[0]
    note = context(strings.LONG_ANSWER.format(length=len(text)))
    message = answer.answer_message(first)
    message["blocks"].append(note)
    posted = await post(client, thread, message) is not None
    title = strings.LONG_ANSWER_FILE
    attached = await post_file(client, thread, text, title=title, filename="answer.md")
    return posted and attached


async def post_error(client: AsyncWebClient, thread: Thread, message: str) -> None:
    await post(client, thread, error_message(message))


async def post_results(
    client: AsyncWebClient,
    thread: Thread,
    query_results: tuple[QueryResult, ...],
    preview_rows: int = DEFAULT_PREVIEW_ROWS,
) -> None:
    for result in query_results[:MAX_RESULTS]:
        try:
            await results.post_result(
                client, thread.channel, thread.thread_ts, result, preview_rows
            )
        except SLACK_ERRORS as exc:
            log.error("result of %s not attached in %s: %s", result.database, thread, exc)
            # The table at least, without its file (nor its chart, in case that was it).
            await post(client, thread, result_message(result, preview_rows, with_chart=False))
            await post_error(client, thread, strings.CSV_FAILED.format(database=result.database))
    hidden = len(query_results) - MAX_RESULTS
    if hidden > 0:
        await post(client, thread, answer_message(f"_{hidden} more results not shown._"))
