"""Words for people: refusals say what happened and what to do, people are mentions."""

from __future__ import annotations

import pytest

from bot import guard
from bot.changes.types import ApprovalDecision, PendingApproval
from bot.slack import strings
from bot.slack.blocks.approval_card import decided_card


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("denied by U0ONCALL1; not executed", "denied by <@U0ONCALL1>; not executed"),
        ("a column UNSIGNED stays a word", "a column UNSIGNED stays a word"),  # no digit
        ("already <@U0ONCALL1>", "already &lt;@U0ONCALL1&gt;"),  # escaped, not doubled
        ("W0123456 approved", "<@W0123456> approved"),  # enterprise user IDs too
    ],
)
def test_bare_user_ids_become_mentions(text: str, shown: str) -> None:
    assert strings.mention_ids(text) == shown


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        (guard.PRODUCTION_WRITE, "Production is read-only for dbagent"),  # what to do: the SQL
        (guard.TRANSACTION_CONTROL, "Send the change as plain statements"),
        ("Blocked: unknown database 'x'", "Unknown database 'x'. Nothing was run."),
    ],
)
def test_refusals_are_written_for_the_person(reason: str, words: str) -> None:
    said = strings.refusal(reason)
    assert words in said and "Blocked" not in said and "show the SQL to the user" not in said


def test_a_denied_card_names_the_approver_as_a_mention() -> None:
    pending = PendingApproval(
        id="p1",
        session_id="T:C:1.1",
        tool_call_id="c",
        database="shop-staging",
        environment="staging",
        risk="write",
        sql="DELETE FROM orders",
        requester="U0ASKER1",
        created_at=1.0,
    )
    decision = ApprovalDecision(
        pending, "U0ONCALL1", False, None, "denied by U0ONCALL1; not executed", 2.0
    )
    card = decided_card(decision)
    assert "U0ONCALL1;" not in card["text"].replace("<@U0ONCALL1>", "")
    assert "denied by <@U0ONCALL1>" in str(card["blocks"])


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(5, "just now"), (240, "4 min ago"), (3 * 3600, "3 h ago"), (86400, "1 day ago")],
)
def test_ages_read_like_speech(seconds: float, said: str) -> None:
    assert strings.age(seconds) == said
