"""Everything the bot posts in a thread: answers, results, cards, questions, errors — and
`answer_in_thread`, the one way a run of the agent ends in Slack.

Posting never raises: a failure to post is logged, and a short note is tried in its place,
so one bad upload cannot swallow the answer it belongs to.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Outcome,
    PendingApproval,
    QueryResult,
    Question,
    Stopped,
)
from bot.slack import results, strings
from bot.slack.blocks import answer, approval_card, question
from bot.slack.blocks.messages import answer_message, error_message
from bot.slack.blocks.result_table import DEFAULT_PREVIEW_ROWS, result_message
from bot.slack.blocks.working import stopped_message
from bot.slack.sessions import Thread
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.live import LiveProgress
    from bot.slack.open_messages import OpenMessage
    from bot.slack.proposals import Proposals
    from bot.slack.services import Services
    from bot.slack.status_line import StatusLine

log = logging.getLogger(__name__)

SLACK_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)
# Results posted per answer; more would bury the thread (the model saw them all).
MAX_RESULTS = 10
UNEXPECTED = strings.UNEXPECTED


async def post(client: AsyncWebClient, thread: Thread, message: dict[str, Any]) -> str | None:
    """Post in the thread; returns the message's ts, or None when Slack refused it."""
    try:
        response = await client.chat_postMessage(
            channel=thread.channel, thread_ts=thread.thread_ts, **message
        )
    except SLACK_ERRORS as exc:
        log.error("posting in %s failed: %s", thread.session_id, exc)
        return None
    return response.get("ts")


async def update(client: AsyncWebClient, channel: str, ts: str, message: dict[str, Any]) -> bool:
    """Replace a message the bot posted; False (logged) when Slack refused."""
    try:
        await client.chat_update(channel=channel, ts=ts, **message)
    except SLACK_ERRORS as exc:
        log.warning("message %s in %s not updated: %s", ts, channel, exc)
        return False
    return True


async def post_text(
    client: AsyncWebClient, thread: Thread, text: str, proposals: Proposals | None = None
) -> bool:
    """Post the model's text as safe mrkdwn, split to fit; False when a piece failed.
    With `proposals`, every SQL block the text proposes gets Run / Edit & run buttons."""
    messages = None
    if proposals is not None:
        try:
            messages = await proposals.messages(thread, text)
        except Exception:
            # The answer matters more than its buttons: post it plain.
            log.exception("buttons for the SQL of an answer in %s failed", thread.session_id)
    if messages is None:
        messages = [answer.answer_message(piece) for piece in answer.answer_pieces(text)]
    posted = True
    for message in messages:
        if await post(client, thread, message) is None:
            posted = False
    return posted


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


async def post_card(client: AsyncWebClient, thread: Thread, pending: PendingApproval) -> str | None:
    """The approval card (its ts, or None when Slack refused it); SQL too long for the
    card is attached in full as a file."""
    card_ts = await post(client, thread, approval_card.approval_card(pending))
    if card_ts is None:
        await post_error(
            client, thread, "The approval card could not be posted; the change was not run."
        )
        return None
    _, cut = approval_card.card_sql(pending.sql)
    if not cut:
        return card_ts
    try:
        await client.files_upload_v2(
            channel=thread.channel,
            thread_ts=thread.thread_ts,
            content=pending.sql,
            filename=f"approval-{pending.id}.sql",
            title=f"Full SQL awaiting approval on {pending.database}",
            snippet_type="sql",
        )
    except SLACK_ERRORS as exc:
        log.error("full SQL of approval %s not attached: %s", pending.id, exc)
        await post_error(client, thread, "The full SQL could not be attached to this card.")
    return card_ts


@dataclass(frozen=True, slots=True)
class Delivered:
    """What `deliver` posted that later clicks or messages may need to update."""

    card_ts: str | None = None
    question_ts: str | None = None


async def deliver(
    client: AsyncWebClient,
    thread: Thread,
    outcome: Outcome,
    *,
    proposals: Proposals | None = None,
    preview_rows: int = DEFAULT_PREVIEW_ROWS,
    text_shown: bool = False,
) -> Delivered:
    """Post a run's outcome in its thread: the text (its SQL blocks with buttons when
    `proposals` is given; not again when `text_shown`, streamed already), the results it
    rests on, and the approval card or question when the run waits for one."""
    if isinstance(outcome, Stopped):
        await post(client, thread, stopped_message(outcome.by))
        await post_results(client, thread, outcome.results, preview_rows)
        return Delivered()
    if isinstance(outcome, Failed):
        await post_error(client, thread, outcome.message)
        await post_results(client, thread, outcome.results, preview_rows)
        return Delivered()
    if outcome.text.strip() and not text_shown:
        await post_text(client, thread, outcome.text, proposals)
    elif isinstance(outcome, Answer) and not outcome.results and not text_shown:
        await post_text(client, thread, "Done.")
    await post_results(client, thread, outcome.results, preview_rows)
    if isinstance(outcome, AwaitingReply):
        question_ts = await post(client, thread, question.question_message(outcome.question))
        return Delivered(question_ts=question_ts)
    if isinstance(outcome, AwaitingApproval):
        return Delivered(card_ts=await post_card(client, thread, outcome.pending))
    return Delivered()


Poster = Callable[[Outcome], Awaitable[Delivered]]


async def answer_in_thread(
    services: Services,
    thread: Thread,
    status: StatusLine | LiveProgress,
    run: Awaitable[Outcome | None],
    *,
    what: str,
    replier: str | None = None,
    poster: Poster | None = None,
) -> None:
    """The end of every run in a thread: await `run`, post its outcome (an unexpected
    error as a short apology; None: the run already told the person), clear the status
    line, and remember the card or question posted so a newer message can close it.

    `replier` wrote the message that started the run: a message replaces the card or
    question open before it (or, the asker's reply, answers an input question), which
    then says so. `poster` replaces the usual layout of the outcome."""
    session = thread.session_id
    before = _OpenBefore.of(services, session) if replier is not None else None
    try:
        outcome = await run
    except StateError as exc:  # the person can act on it (or tell who can)
        log.error("%s in %s failed: %s", what, session, exc)
        outcome = Failed(f"I could not save this conversation, so I stopped: {exc}")
    except Exception:
        log.exception("%s in %s failed", what, session)
        outcome = Failed(UNEXPECTED)
    if outcome is None:
        await status.clear()
        return
    if poster is not None:
        delivered = await poster(outcome)
    else:
        delivered = await deliver(
            services.client,
            thread,
            outcome,
            proposals=services.proposals,
            preview_rows=services.settings.slack.preview_rows,
        )
    await status.clear()
    if before is not None and replier is not None:
        await before.close_if_gone(services, session, replier)
    if isinstance(outcome, AwaitingApproval):
        services.open_cards.remember(session, outcome.pending, thread.channel, delivered.card_ts)
    if isinstance(outcome, AwaitingReply):
        services.open_questions.remember(
            session, outcome.question, thread.channel, delivered.question_ts
        )


@dataclass(frozen=True, slots=True)
class _OpenBefore:
    card: OpenMessage[PendingApproval] | None
    question: OpenMessage[Question] | None

    @classmethod
    def of(cls, services: Services, session: str) -> _OpenBefore:
        return cls(services.open_cards.get(session), services.open_questions.get(session))

    async def close_if_gone(self, services: Services, session: str, replier: str) -> None:
        """After the run: say so on the card or question it made obsolete."""
        card, open_question = self.card, self.question
        if card is not None:
            still_pending = await services.agent.pending(card.item.id) is not None
            if services.open_cards.take_if_gone(session, card, still_open=still_pending):
                gone = approval_card.superseded_card(card.item)
                await update(services.client, card.channel, card.ts, gone)
        if open_question is not None:
            asked = open_question.item
            still_open = await services.agent.question(asked.id) is not None
            if services.open_questions.take_if_gone(session, open_question, still_open=still_open):
                if asked.kind == "input" and replier == asked.requester:
                    gone = question.replied_question(asked, replier)
                else:
                    gone = question.closed_question(asked)
                await update(services.client, open_question.channel, open_question.ts, gone)
