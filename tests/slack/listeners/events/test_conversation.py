"""What a person asked, read out of a Slack message event."""

from __future__ import annotations

import pytest

from bot.slack.listeners.events.conversation import Incoming, mentions, question_text

QUESTIONS = [
    # (Slack text, question, reason)
    ("<@UBOT> how many orders?", "how many orders?", "the bot's mention is removed"),
    ("orders <@UBOT|dbagent> today", "orders   today", "also with a label, anywhere"),
    ("ask <@U0OTHER> too", "ask <@U0OTHER> too", "other people's mentions stay"),
    ("total &gt; 10 &amp;&amp; a &lt;&gt; b", "total > 10 && a <> b", "Slack's escaping is undone"),
    ("a typed &amp;lt;", "a typed &lt;", "an escaped entity stays literal"),
    ("see <https://x.io/a?b=1|x.io/a>", "see https://x.io/a?b=1", "links become plain URLs"),
    ("<@UBOT>", "", "a bare mention is an empty question"),
]


@pytest.mark.parametrize(("text", "question", "reason"), QUESTIONS)
def test_question_text(text: str, question: str, reason: str) -> None:
    assert question_text(text, "UBOT") == question, reason


def test_a_reply_mentioning_the_bot_is_recognised() -> None:
    assert mentions("hey <@UBOT> look", "UBOT")
    assert not mentions("hey <@U0OTHER>", "UBOT")
    assert not mentions("hey <@UBOT>", None)


def test_an_event_in_a_thread_belongs_to_the_threads_session() -> None:
    body = {"team_id": "T1", "event_id": "Ev1"}
    event = {"channel": "C1", "ts": "2.2", "thread_ts": "1.1", "user": "U1", "text": "hi"}
    incoming = Incoming.from_event(body, event, is_dm=False)
    assert incoming is not None
    assert incoming.thread.session_id == "T1:C1:1.1"
    assert (incoming.ts, incoming.user, incoming.event_id) == ("2.2", "U1", "Ev1")


def test_a_top_level_message_starts_its_own_thread() -> None:
    event = {"channel": "D1", "ts": "3.3", "user": "U1", "text": "hi"}
    incoming = Incoming.from_event({"team_id": "T1"}, event, is_dm=True)
    assert incoming is not None and incoming.thread.session_id == "T1:D1:3.3"


@pytest.mark.parametrize(
    "event",
    [{}, {"channel": "C1", "ts": "1.1"}, {"channel": "C1", "user": "U1"}, {"ts": 1, "user": 2}],
)
def test_an_event_without_user_channel_or_ts_is_not_a_question(event: dict) -> None:
    assert Incoming.from_event({"team_id": "T1"}, event, is_dm=False) is None
