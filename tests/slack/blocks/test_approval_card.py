"""Block Kit builders: the approval card, the decided card, answers and the audit line."""

from __future__ import annotations

import json

from bot.changes.types import ApprovalDecision, PendingApproval
from bot.slack.blocks import approval_card as blocks
from bot.slack.blocks.messages import error_message
from bot.slack.blocks.working import working_message

SQL = "UPDATE orders SET status = 'paid' WHERE id = 11 AND note <> '<!channel>'"


def pending(sql: str = SQL, **changes: str) -> PendingApproval:
    values = {
        "id": "p0123456789abcdef",
        "session_id": "T1:C1:1700000000.000100",
        "tool_call_id": "call_1",
        "database": "shop-staging",
        "environment": "staging",
        "risk": "write",
        "sql": sql,
        "requester": "U0ASKER",
        "created_at": 1_700_000_000.0,
        **changes,
    }
    return PendingApproval(**values)  # type: ignore[arg-type]


def decision(approved: bool, summary: str, scope: str | None = "once") -> ApprovalDecision:
    return ApprovalDecision(
        pending=pending(),
        approver="U0APPROVER",
        approved=approved,
        scope=scope if approved else None,
        summary=summary,
        decided_at=1_700_000_100.0,
    )


def texts(message: dict) -> str:
    """Every text the message's blocks show, joined."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "text" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message["blocks"])
    return "\n".join(found)


def buttons(message: dict) -> dict[str, dict]:
    return {
        element["action_id"]: element
        for block in message["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    }


def test_the_card_shows_database_environment_risk_requester_and_exact_sql() -> None:
    card = blocks.approval_card(pending())
    shown = texts(card)
    for fact in ("shop-staging", "staging", "write", "<@U0ASKER>"):
        assert fact in shown
    escaped_sql = SQL.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert f"```\n{escaped_sql}\n```" in shown
    assert "<!channel>" not in json.dumps(card)


def test_the_card_has_three_buttons_carrying_only_the_pending_id() -> None:
    card_buttons = buttons(blocks.approval_card(pending()))
    assert list(card_buttons) == ["approve_once", "approve_thread", "deny"]
    assert {b["value"] for b in card_buttons.values()} == {"p0123456789abcdef"}
    assert card_buttons["approve_once"]["style"] == "primary"
    assert "confirm" in card_buttons["approve_once"]
    assert card_buttons["deny"]["style"] == "danger"
    assert "UPDATE" not in json.dumps(card_buttons)


def test_block_kit_limits_hold_for_any_sql() -> None:
    card = blocks.approval_card(pending("SELECT 1 /* & */ " * 2_000))
    for block in card["blocks"]:
        text = block.get("text")
        if isinstance(text, dict) and block["type"] == "section":
            assert len(text["text"]) <= 3_000
        for field in block.get("fields", []):
            assert len(field["text"]) <= 2_000
    for button in buttons(card).values():
        assert len(button["text"]["text"]) <= 75
        assert len(button["value"]) <= 2_000
        if "confirm" in button:
            assert len(button["confirm"]["text"]["text"]) <= 300


def test_long_sql_is_cut_in_the_card_and_said_so() -> None:
    long_sql = "INSERT INTO t VALUES " + ", ".join(f"({i})" for i in range(2_000))
    shown, cut = blocks.card_sql(long_sql)
    assert cut and shown.endswith("…") and len(shown) <= blocks.CARD_SQL_CHARS
    assert "attached" in texts(blocks.approval_card(pending(long_sql)))
    assert blocks.card_sql(SQL)[1] is False


def test_an_approved_card_says_who_when_and_the_outcome_without_buttons() -> None:
    card = blocks.decided_card(decision(True, "1 row affected"))
    shown = texts(card)
    assert "Approved once" in shown and "<@U0APPROVER>" in shown
    assert "<!date^1700000100^" in shown
    assert "1 row affected" in shown
    assert not buttons(card)
    assert "UPDATE orders" in shown  # the SQL stays on the record


def test_a_thread_approval_says_so() -> None:
    assert "Approved for this thread" in texts(blocks.decided_card(decision(True, "ok", "thread")))


def test_a_denied_card_says_who_denied() -> None:
    card = blocks.decided_card(decision(False, "denied by U0APPROVER; not executed"))
    assert "Denied" in texts(card) and "<@U0APPROVER>" in texts(card)
    assert not buttons(card)


def test_an_error_outcome_is_escaped() -> None:
    card = blocks.decided_card(decision(True, "Error: near '<' at line 1"))
    assert "near '&lt;' at line 1" in texts(card)


def test_the_audit_line_names_asker_approver_database_and_outcome() -> None:
    line = blocks.audit_line(decision(True, "3 rows affected"), public=True)
    assert "\n" not in line
    for part in ("<@U0ASKER>", "<@U0APPROVER>", "shop-staging", "3 rows affected", "UPDATE"):
        assert part in line


def test_the_audit_line_of_a_private_conversation_links_instead_of_showing_sql() -> None:
    link = "https://x.slack.com/archives/G1/p1"
    line = blocks.audit_line(decision(True, "3 rows affected"), card_link=link)
    assert "\n" not in line and "UPDATE" not in line and "private conversation" in line
    for part in ("<@U0ASKER>", "<@U0APPROVER>", "shop-staging", link):
        assert part in line
    posted = blocks.posted_line(decision(True, "").pending, link)
    assert "UPDATE" not in posted and link in posted and "<@U0ASKER>" in posted


def test_console_requesters_are_shown_as_text_not_mentions() -> None:
    card = blocks.approval_card(pending(requester="alice<admin>"))
    assert "alice&lt;admin&gt;" in texts(card)


def test_status_and_error_messages_are_escaped() -> None:
    assert "&lt;x&gt;" in working_message("Reading <x>", None)["text"]
    assert "&lt;!here&gt;" in error_message("bad <!here>")["text"]


def test_the_card_says_why_approval_is_needed() -> None:
    card = blocks.approval_card(pending(reason="a write on staging needs an approver"))
    assert "a write on staging needs an approver" in texts(card)


def test_a_superseded_card_says_nothing_ran_and_has_no_buttons() -> None:
    card = blocks.superseded_card(pending())
    assert "Not run" in texts(card) and "UPDATE orders" in texts(card)
    assert not buttons(card)


def test_the_card_notification_mentions_the_requester_and_escapes_the_rest() -> None:
    text = blocks.approval_card(pending(database="<shop>"))["text"]
    assert text.endswith("requested by <@U0ASKER>") and "&lt;shop&gt;" in text
