"""Writes: the approval card, who may click it, the first decision winning, and restarts."""

from __future__ import annotations

import asyncio
import copy
import json

from tests.fakes.model_server import call, calls, say
from tests.fakes.slack_server import TEAM_ID, Message
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    AUDIT_CHANNEL,
    BYSTANDER,
    CHANNEL,
    GROUP,
    GROUP_MEMBER,
    PRODUCTION,
    SCHEMA,
    STAGING,
    SlackHarness,
    run_sql,
)

MARK_PAID = "UPDATE orders SET status = 'paid' WHERE id = 11"
BUMP = "UPDATE orders SET total = total + 1 WHERE id = 12"


def write(sql: str = MARK_PAID, database: str = STAGING):
    return calls(call("execute_query", {"database": database, "sql": sql}))


async def column(harness: SlackHarness, name: str, order_id: int) -> object:
    rows = await run_sql(
        harness.shop_url, [f"SELECT {name} FROM {SCHEMA}.orders WHERE id = {order_id}"]
    )
    return rows[0][0]


def shown(message: Message) -> str:
    return json.dumps(message.blocks)


def has_buttons(message: Message) -> bool:
    """Approval buttons (an outcome may carry Undo, which approves nothing)."""
    return any(block.get("block_id") == "approval" for block in message.blocks)


def has_undo(message: Message) -> bool:
    return any(block.get("block_id") == "undo" for block in message.blocks)


async def answered(harness: SlackHarness, thread_ts: str, text: str) -> list[str]:
    await harness.slack.wait_for(lambda: any(text in t for t in harness.texts(thread_ts)))
    await harness.idle()
    return harness.texts(thread_ts)


async def test_a_write_runs_once_after_an_approver_clicks(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Order 11 is now paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    assert MARK_PAID in shown(card) and f"<@{ASKER}>" in shown(card)
    assert "staging" in shown(card) and "write" in shown(card)
    assert await column(harness, "status", 11) == "pending"

    # Someone who is not an approver: told privately, nothing changes.
    sent = await harness.click("approve_once", card, user=BYSTANDER)
    assert sent.status == 200
    (refusal,) = await slack.wait_for(lambda: slack.ephemerals(BYSTANDER))
    assert "approvers" in refusal.text and refusal.thread_ts == thread_ts
    await harness.idle()
    assert slack.message(CHANNEL, card.ts).edits == 0
    assert await column(harness, "status", 11) == "pending"

    # An approver: it runs, the card says so, the answer arrives.
    await harness.click("approve_once", card, user=APPROVER)
    texts = await answered(harness, thread_ts, "Order 11 is now paid.")
    assert await column(harness, "status", 11) == "paid"
    decided = slack.message(CHANNEL, card.ts)
    assert decided.edits == 1 and not has_buttons(decided) and has_undo(decided)
    assert "Approved once" in shown(decided) and f"<@{APPROVER}>" in shown(decided)
    assert "1 row" in shown(decided)
    assert texts[-1] == "Order 11 is now paid."
    assert json.loads(harness.model.new_tool_results()[0])["affected_rows"] == 1

    # Two audit lines: the card was posted (with a link to it); the write ran (who asked,
    # who approved, where, the outcome).
    posted, ran = [m for m in slack.messages if m.channel == AUDIT_CHANNEL]
    for part in (f"<@{ASKER}>", STAGING, "1 row", "https://fake.slack.com/archives/"):
        assert part in posted.text
    for part in (f"<@{ASKER}>", f"<@{APPROVER}>", STAGING, "1 row"):
        assert part in ran.text


async def test_members_of_an_approver_group_may_approve(harness: SlackHarness) -> None:
    harness.model.script(write(), say("Paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=GROUP_MEMBER)
    await answered(harness, thread_ts, "Paid.")
    assert await column(harness, "status", 11) == "paid"


async def test_a_double_click_runs_the_write_once(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(BUMP), say("Bumped."), say("Bumped twice?!"))
    thread_ts, _ = await harness.mention("add one to order 12")
    card = await harness.wait_for_card(thread_ts)
    await asyncio.gather(
        harness.click("approve_once", card, user=APPROVER),
        harness.click("approve_once", card, user=GROUP_MEMBER),
        harness.click("approve_thread", card, user=APPROVER),
    )
    await answered(harness, thread_ts, "Bumped.")
    await slack.wait_for(lambda: len(slack.ephemerals()) == 2)
    assert str(await column(harness, "total", 12)) == "13.00"
    assert slack.message(CHANNEL, card.ts).edits == 1
    assert all("no longer pending" in m.text for m in slack.ephemerals())
    assert len(harness.model.requests) == 2

    # A replay of the click later does nothing either.
    await harness.click("approve_once", card, user=APPROVER)
    await slack.wait_for(lambda: len(slack.ephemerals()) == 3)
    await harness.idle()
    assert str(await column(harness, "total", 12)) == "13.00"


async def test_a_deny_does_not_run_the_write(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Understood, I left order 11 alone."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("deny", card, user=BYSTANDER)  # not an approver: refused
    await slack.wait_for(lambda: slack.ephemerals(BYSTANDER))
    await harness.click("deny", card, user=APPROVER)
    await answered(harness, thread_ts, "left order 11 alone")
    assert await column(harness, "status", 11) == "pending"
    decided = slack.message(CHANNEL, card.ts)
    assert "Denied" in shown(decided) and not has_buttons(decided)
    assert "denied by" in harness.model.new_tool_results()[0]
    # The audit channel heard of the card, and of nothing that ran.
    (posted,) = [m for m in slack.messages if m.channel == AUDIT_CHANNEL]
    assert posted.text.startswith(":lock:")


async def test_the_sql_that_runs_comes_from_the_stored_approval_not_the_click(
    harness: SlackHarness,
) -> None:
    harness.model.script(write(), say("Paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    forged = copy.deepcopy(card)
    forged.text = "DROP TABLE orders"
    for block in forged.blocks:
        if block.get("type") == "section" and "text" in block:
            block["text"]["text"] = "```\nDROP TABLE orders\n```"
    await harness.click("approve_once", forged, user=APPROVER)
    await answered(harness, thread_ts, "Paid.")
    assert await column(harness, "status", 11) == "paid"  # the table is still there


async def test_an_unknown_approval_id_does_nothing(harness: SlackHarness) -> None:
    harness.model.script(write(), say("never"))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.click_value("approve_once", "not-a-real-id", card, user=APPROVER)
    await harness.slack.wait_for(lambda: harness.slack.ephemerals(APPROVER))
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"
    assert harness.slack.message(CHANNEL, card.ts).edits == 0


async def test_an_approval_survives_a_restart(harness: SlackHarness) -> None:
    harness.model.script(write(), say("Paid after the restart."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.stop()

    restarted = SlackHarness(harness.slack, harness.model, harness.shop_url, harness.state_dir)
    await restarted.start()
    try:
        await restarted.click("approve_once", card, user=APPROVER)
        await answered(restarted, thread_ts, "Paid after the restart.")
        assert await column(restarted, "status", 11) == "paid"
        assert "Approved once" in shown(restarted.slack.message(CHANNEL, card.ts))
        # The thread is still known after the restart: a reply needs no mention.
        restarted.model.script(say("Still here."))
        await restarted.message("thanks", thread_ts=thread_ts)
        await answered(restarted, thread_ts, "Still here.")
    finally:
        await restarted.stop()


async def test_a_production_write_is_refused_without_a_card(harness: SlackHarness) -> None:
    harness.model.script(
        write(database=PRODUCTION), say("I can't change production; here is the SQL.")
    )
    thread_ts, _ = await harness.mention("mark order 11 as paid on prod")
    await answered(harness, thread_ts, "can't change production")
    assert harness.cards(thread_ts) == []
    assert harness.model.new_tool_results()[0].startswith("Blocked")
    assert await column(harness, "status", 11) == "pending"


async def test_approve_for_this_thread_lets_the_same_sql_run_again(harness: SlackHarness) -> None:
    harness.model.script(write(BUMP), say("Bumped once."), write(BUMP), say("Bumped again."))
    thread_ts, _ = await harness.mention("add one to order 12")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_thread", card, user=APPROVER)
    await answered(harness, thread_ts, "Bumped once.")
    assert "Approved for this thread" in shown(harness.slack.message(CHANNEL, card.ts))
    await harness.message("once more please", thread_ts=thread_ts)
    await answered(harness, thread_ts, "Bumped again.")
    assert len(harness.cards(thread_ts)) == 1
    assert str(await column(harness, "total", 12)) == "14.00"


async def test_long_sql_is_cut_in_the_card_and_attached_in_full(harness: SlackHarness) -> None:
    ids = ", ".join(str(i) for i in range(11, 1_500))
    long_sql = f"UPDATE orders SET status = 'paid' WHERE id IN ({ids})"
    harness.model.script(write(long_sql), say("Denied, fine."))
    thread_ts, _ = await harness.mention("mark them all paid")
    card = await harness.wait_for_card(thread_ts)
    assert "attached" in shown(card) and ids not in shown(card)
    (attached,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert attached.text == long_sql
    await harness.click("deny", card, user=APPROVER)
    await answered(harness, thread_ts, "Denied, fine.")


async def test_a_newer_message_closes_the_card_it_replaces(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Fine, I won't change anything."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.message("actually, don't", thread_ts=thread_ts)
    await answered(harness, thread_ts, "won't change anything")
    closed = slack.message(CHANNEL, card.ts)
    assert "No longer pending" in shown(closed) and not has_buttons(closed)
    assert "superseded" in harness.model.new_tool_results()[0]

    await harness.click("approve_once", card, user=APPROVER)
    (note,) = await slack.wait_for(lambda: slack.ephemerals(APPROVER))
    assert "no longer pending" in note.text
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"


async def test_an_expired_card_runs_nothing_and_loses_its_buttons(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    assert harness.agent is not None and harness.state is not None
    session = await harness.agent.session(f"{TEAM_ID}:{CHANNEL}:{thread_ts}")
    assert session is not None and session.pending_id is not None
    # As if it were posted a day ago: the same record, older.
    record = await harness.state.pending.claim(session.pending_id)
    assert record is not None
    record["created_at"] -= harness.settings.limits.approval_ttl_s + 1
    await harness.state.pending.add(record)
    await harness.click("approve_once", card, user=APPROVER)
    (note,) = await slack.wait_for(lambda: slack.ephemerals(APPROVER))
    assert "expired" in note.text
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"
    expired = slack.message(CHANNEL, card.ts)
    assert not has_buttons(expired) and "expired" in shown(expired)


async def test_the_card_mentions_the_approvers_and_says_when_it_expires(
    harness: SlackHarness,
) -> None:
    harness.model.script(write())
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    # The notification text itself mentions them, so Slack notifies them.
    assert f"<@{APPROVER}>" in card.text and f"<!subteam^{GROUP}>" in card.text
    assert "<!date^" in card.text and "{date_short_pretty} {time}|" in card.text
    assert "Approvals:* 0 of 1" in shown(card)


async def test_the_requester_cannot_approve_their_own_change(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid", user=APPROVER)
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    (refusal,) = await slack.wait_for(lambda: slack.ephemerals(APPROVER))
    assert "cannot approve it yourself" in refusal.text
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"
    assert has_buttons(slack.message(CHANNEL, card.ts))
    # Another approver may.
    await harness.click("approve_once", card, user=GROUP_MEMBER)
    await answered(harness, thread_ts, "Paid.")
    assert await column(harness, "status", 11) == "paid"


async def test_a_group_member_is_refused_when_slack_cannot_confirm_the_group(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    harness.model.script(write())
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    slack.fail_next("usergroups.users.list", "missing_scope")
    await harness.click("approve_once", card, user=GROUP_MEMBER)
    (refusal,) = await slack.wait_for(lambda: slack.ephemerals(GROUP_MEMBER))
    assert "could not tell me" in refusal.text
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"


async def test_approvers_get_a_dm_with_a_link_to_the_card(harness: SlackHarness) -> None:
    harness.settings.approvals.dm = True
    harness.model.script(write())
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    await harness.wait_for_card(thread_ts)
    dms = {m.channel: m for m in harness.slack.messages if m.channel in (APPROVER, GROUP_MEMBER)}
    assert set(dms) == {APPROVER, GROUP_MEMBER}  # the group expanded to its members
    for dm in dms.values():
        assert "https://fake.slack.com/archives/" in dm.text and f"<@{ASKER}>" in dm.text


async def test_a_cut_card_whose_full_sql_cannot_be_attached_offers_no_approve(
    harness: SlackHarness,
) -> None:
    long_sql = MARK_PAID + " AND status <> '" + "x" * 3_000 + "'"
    harness.model.script(write(long_sql))
    harness.slack.fail_next("files.getUploadURLExternal", "internal_error", times=10)
    thread_ts, _ = await harness.mention("mark order 11 as paid, carefully")
    card = await harness.wait_for_card(thread_ts)
    actions = [e["action_id"] for b in card.blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == ["deny"]
    assert "Cannot be approved here" in shown(card)


async def test_a_cut_card_comes_after_its_full_sql(harness: SlackHarness) -> None:
    long_sql = MARK_PAID + " AND status <> '" + "x" * 3_000 + "'"
    harness.model.script(write(long_sql))
    thread_ts, _ = await harness.mention("mark order 11 as paid, carefully")
    card = await harness.wait_for_card(thread_ts)
    (full,) = harness.slack.files_in(CHANNEL, thread_ts)
    assert full.text == long_sql
    actions = [e["action_id"] for b in card.blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == ["approve_once", "approve_thread", "deny"]


async def test_the_card_shows_the_rows_the_change_will_touch(harness: SlackHarness) -> None:
    harness.model.script(write("UPDATE orders SET status = 'late' WHERE status = 'pending'"))
    thread_ts, _ = await harness.mention("mark pending orders late")
    card = await harness.wait_for_card(thread_ts)
    assert "2 rows" in card.text and "*Rows:* 2 rows" in shown(card)
    assert "First 2 rows it changes" in shown(card)
    assert "mark pending orders late" in shown(card)  # who asked, in their words


async def test_the_asker_approving_their_own_change_is_refused_privately(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    harness.model.script(write())
    thread_ts, _ = await harness.mention("mark order 11 as paid", user=APPROVER)
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await slack.wait_for(lambda: slack.ephemerals(APPROVER))
    assert "cannot approve it yourself" in slack.ephemerals(APPROVER)[-1].text
    assert await column(harness, "status", 11) == "pending"


async def test_two_approvers_are_needed_and_the_card_shows_who_has_approved(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    harness.settings.approvals.required = 2
    harness.model.script(write(), say("Paid, with two approvals."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    assert "Approvals:* 0 of 2" in shown(card)

    await harness.click("approve_once", card, user=APPROVER)
    (counted,) = await slack.wait_for(lambda: slack.ephemerals(APPROVER))
    assert "1 of 2" in counted.text and "nothing has run yet" in counted.text
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"
    updated = slack.message(CHANNEL, card.ts)
    assert f"Approvals:* 1 of 2 (<@{APPROVER}>)" in shown(updated) and has_buttons(updated)

    await harness.click("approve_once", card, user=GROUP_MEMBER)
    await answered(harness, thread_ts, "Paid, with two approvals.")
    assert await column(harness, "status", 11) == "paid"
    decided = slack.message(CHANNEL, card.ts)
    assert not has_buttons(decided)
    assert f"also approved by <@{APPROVER}>" in shown(decided)


async def test_undo_puts_the_rows_back_after_a_second_approval(harness: SlackHarness) -> None:
    slack = harness.slack
    harness.model.script(write(), say("Paid."))
    thread_ts, _ = await harness.mention("mark order 11 as paid")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await answered(harness, thread_ts, "Paid.")
    assert await column(harness, "status", 11) == "paid"
    decided = copy.deepcopy(slack.message(CHANNEL, card.ts))
    await harness.press(decided, "undo", user=ASKER)
    cards = await slack.wait_for(
        lambda: len(harness.cards(thread_ts)) >= 2 and harness.cards(thread_ts)
    )
    await harness.idle()
    undo_card = copy.deepcopy(next(c for c in cards if c.ts != card.ts))
    assert "pending" in shown(undo_card)
    await harness.click("approve_once", undo_card, user=APPROVER)
    await slack.wait_for(lambda: slack.message(CHANNEL, undo_card.ts).text.startswith("Approved"))
    await harness.idle()
    assert await column(harness, "status", 11) == "pending"
