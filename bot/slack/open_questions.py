"""Question messages still open, per thread, so one a newer message answered or replaced
can say so.

An input question is answered by the asker's next message in the thread; any other
message replaces a question (the agent drops it). Without an update the message would keep
buttons that can only say "already answered", or keep asking for a reply. Kept in memory,
like OpenCards: after a restart an old question keeps its buttons, and a click on it is
answered privately.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.outcomes import AwaitingReply, Outcome, Question
from bot.slack import question_blocks
from bot.slack.replies import SLACK_ERRORS

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    question: Question
    channel: str
    ts: str


class OpenQuestions:
    def __init__(self) -> None:
        self._by_session: dict[str, OpenQuestion] = {}

    def get(self, session: str) -> OpenQuestion | None:
        return self._by_session.get(session)

    def remember(self, session: str, outcome: Outcome, channel: str, ts: str | None) -> None:
        if isinstance(outcome, AwaitingReply) and ts is not None:
            self._by_session[session] = OpenQuestion(outcome.question, channel, ts)

    def forget(self, session: str, question_id: str) -> None:
        """A click answered it (and updated the message itself)."""
        open_question = self._by_session.get(session)
        if open_question is not None and open_question.question.id == question_id:
            del self._by_session[session]

    async def close_if_gone(
        self,
        client: AsyncWebClient,
        session: str,
        before: OpenQuestion | None,
        *,
        still_open: bool,
        replier: str,
    ) -> None:
        """After the run of `replier`'s message, begun with `before` open: when the
        question is gone, say how — the asker's reply answered an input question; anything
        else replaced it."""
        if before is None or self._by_session.get(session) is not before or still_open:
            return
        del self._by_session[session]
        question = before.question
        if question.kind == "input" and replier == question.requester:
            message = question_blocks.replied_question(question, replier)
        else:
            message = question_blocks.closed_question(question)
        try:
            await client.chat_update(channel=before.channel, ts=before.ts, **message)
        except SLACK_ERRORS as exc:
            log.warning("question message %s not updated: %s", before.ts, exc)
