"""A run's outcome in its thread: the text, the results, the card or question it waits
for — and `answer_in_thread`, the one way every run of the agent ends in Slack."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.agent.outcomes import (
    Answer,
    AwaitingApproval,
    AwaitingReply,
    Failed,
    Outcome,
    Question,
    Stopped,
)
from bot.changes.types import PendingApproval
from bot.slack import cards, delivery, strings
from bot.slack.blocks import approval_card, question
from bot.slack.blocks.working import stopped_message
from bot.slack.sessions import Thread
from bot.state import StateError

if TYPE_CHECKING:
    from bot.slack.live import LiveProgress
    from bot.slack.open_messages import OpenMessage
    from bot.slack.services import Services
    from bot.slack.status_line import StatusLine

log = logging.getLogger(__name__)

UNEXPECTED = strings.UNEXPECTED


@dataclass(frozen=True, slots=True)
class Delivered:
    """What `deliver` posted that later clicks or messages may need to update."""

    card_ts: str | None = None
    question_ts: str | None = None


async def deliver(
    services: Services, thread: Thread, outcome: Outcome, *, text_shown: bool = False
) -> Delivered:
    """Post a run's outcome in its thread: the text (its SQL blocks with Run buttons; not
    again when `text_shown`, streamed already), the results it rests on, and the approval
    card or question when the run waits for one."""
    client = services.client
    preview_rows = services.settings.slack.preview_rows
    if isinstance(outcome, Stopped):
        await delivery.post(client, thread, stopped_message(outcome.by))
        await delivery.post_results(client, thread, outcome.results, preview_rows)
        return Delivered()
    if isinstance(outcome, Failed):
        await delivery.post_error(client, thread, outcome.message)
        # The rows fetched before the failure are still the person's, with their SQL.
        await delivery.post_results(client, thread, outcome.results, preview_rows)
        return Delivered()
    if outcome.text.strip() and not text_shown:
        limit = services.settings.slack.max_answer_chars
        await delivery.post_text(client, thread, outcome.text, services.proposals, max_chars=limit)
    elif isinstance(outcome, Answer) and not outcome.results and not text_shown:
        await delivery.post_text(client, thread, "Done.")
    await delivery.post_results(client, thread, outcome.results, preview_rows)
    if isinstance(outcome, AwaitingReply):
        message = question.question_message(outcome.question)
        return Delivered(question_ts=await delivery.post(client, thread, message))
    if isinstance(outcome, AwaitingApproval):
        return Delivered(card_ts=await cards.post_card(services, thread, outcome.pending))
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
    before = await _OpenBefore.of(services, session) if replier is not None else None
    try:
        try:
            outcome = await run
        except StateError as exc:  # the person can act on it (or tell who can)
            log.error("%s in %s failed: %s", what, session, exc)
            outcome = Failed(f"I could not save this conversation, so I stopped: {exc}")
        except Exception:
            log.exception("%s in %s failed", what, session)
            outcome = Failed(UNEXPECTED)
        if outcome is None:
            return
        if poster is not None:
            delivered = await poster(outcome)
        else:
            delivered = await deliver(services, thread, outcome)
    finally:
        # Also when the bot is stopping and cancels the run: no status line is left behind.
        await status.clear()
    try:
        if before is not None and replier is not None:
            await before.close_if_gone(services, replier)
        if isinstance(outcome, AwaitingApproval):
            await services.open_cards.remember(
                session, outcome.pending, thread.channel, delivered.card_ts
            )
        if isinstance(outcome, AwaitingReply):
            await services.open_questions.remember(
                session, outcome.question, thread.channel, delivered.question_ts
            )
    except StateError as exc:  # the answer is out; only the old buttons stay
        log.error("open cards and questions of %s not kept: %s", session, exc)


@dataclass(frozen=True, slots=True)
class _OpenBefore:
    cards: list[OpenMessage[PendingApproval]]
    questions: list[OpenMessage[Question]]

    @classmethod
    async def of(cls, services: Services, session: str) -> _OpenBefore | None:
        try:
            cards = await services.open_cards.open_in(session)
            questions = await services.open_questions.open_in(session)
        except StateError as exc:
            log.error("open cards and questions of %s unknown: %s", session, exc)
            return None
        return cls(cards, questions)

    async def close_if_gone(self, services: Services, replier: str) -> None:
        """After the run: say so on each card or question it made obsolete. Taking the
        record decides who updates the message: not a click that decided it meanwhile,
        nor another replica."""
        for card in self.cards:
            if await services.agent.pending(card.item.id) is not None:
                continue
            if await services.open_cards.take(card.item.id) is not None:
                gone = approval_card.superseded_card(card.item)
                await delivery.update(services.client, card.channel, card.ts, gone)
        for open_question in self.questions:
            asked = open_question.item
            if await services.agent.question(asked.id) is not None:
                continue
            if await services.open_questions.take(asked.id) is None:
                continue
            if asked.kind == "input" and replier == asked.requester:
                gone = question.replied_question(asked, replier)
            else:
                gone = question.closed_question(asked)
            await delivery.update(services.client, open_question.channel, open_question.ts, gone)
