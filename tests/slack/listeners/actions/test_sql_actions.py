"""Run and Edit & run on the SQL an answer proposes, end to end through the Slack app."""

from __future__ import annotations

import copy
import json

import pytest

from bot.slack.blocks import sql_actions as run_blocks
from bot.slack.listeners.actions import sql_actions as runs
from bot.slack.listeners.views import edit_and_run
from tests.fakes.model_server import say
from tests.fakes.slack_server import Message
from tests.slack.conftest import (
    APPROVER,
    ASKER,
    BYSTANDER,
    DM,
    PRODUCTION,
    SCHEMA,
    SIGNING_SECRET,
    STAGING,
    SlackHarness,
    action_elements,
    element_of,
    run_sql,
    signed_headers,
)

READ = "SELECT id, status FROM orders ORDER BY id"
BUMP = "UPDATE orders SET total = total + 1 WHERE id = 12"


def answer(sql: str, database: str | None = STAGING) -> str:
    where = f"On {database}:" if database else "Here you go:"
    return f"{where}\n```sql\n{sql}\n```\nClick Run to try it."


async def ask(harness: SlackHarness, text: str) -> tuple[str, Message]:
    """A DM (ask mode) answered with `text`; returns the thread and the answer's message
    holding the buttons."""
    harness.model.script(say(text))
    thread_ts, _ = await harness.dm("show me the SQL")
    await harness.slack.wait_for(lambda: harness.thread(thread_ts, DM))
    await harness.idle()
    with_buttons = [m for m in harness.thread(thread_ts, DM) if action_elements(m)]
    return thread_ts, with_buttons[0]


def posted_after(harness: SlackHarness, thread_ts: str, message: Message) -> list[Message]:
    thread = harness.thread(thread_ts, DM)
    return thread[thread.index(message) + 1 :]


async def after_run(harness: SlackHarness, thread_ts: str, message: Message) -> list[Message]:
    await harness.slack.wait_for(lambda: posted_after(harness, thread_ts, message))
    await harness.idle()
    return posted_after(harness, thread_ts, message)


async def total_of_12(harness: SlackHarness) -> str:
    rows = await run_sql(harness.shop_url, [f"SELECT total FROM {SCHEMA}.orders WHERE id = 12"])
    return str(rows[0][0])


async def audit(harness: SlackHarness) -> list[dict]:
    assert harness.agent is not None
    return await harness.agent.audit.since(None)


async def test_an_answer_with_two_sql_blocks_gets_two_button_sets(harness: SlackHarness) -> None:
    text = (
        f"{STAGING} and {PRODUCTION} share a schema.\n\nCount the orders:\n"
        "```sql\nSELECT COUNT(*) FROM orders\n```\n\n"
        f"Or by status, on {STAGING}:\n```sql\n{READ}\n```"
    )
    _, message = await ask(harness, text)
    sets = [b for b in message.blocks if b.get("type") == "actions"]
    assert len(sets) == 2
    first, second = ([e.get("text", {}).get("text") for e in s["elements"]] for s in sets)
    assert first == [None, "Run", "Edit & run"]  # a database menu first: the answer names none
    assert second == [f"Run on {STAGING}", "Edit & run"]
    assert "SELECT" not in json.dumps(sets)


async def test_run_of_a_read_posts_the_result_and_csv_as_the_clicker(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(READ))
    sent = await harness.press(message, run_blocks.RUN, user=BYSTANDER)
    assert sent.status == 200
    ran, result = await after_run(harness, thread_ts, message)
    assert ran.text.startswith(f":arrow_forward: <@{BYSTANDER}> ran: Ran on {STAGING}: 4 rows")
    assert READ in ran.blocks[0]["text"]["text"]
    (csv,) = harness.slack.files_in(DM, thread_ts)
    assert csv.text.splitlines()[:2] == ["id,status", "10,paid"] and result.files == [csv.id]
    (record,) = await audit(harness)
    assert (record["requester"], record["outcome"]) == (BYSTANDER, "executed")
    assert len(harness.model.requests) == 1  # no model run: the button runs the SQL itself


async def test_run_of_an_update_asks_for_approval_and_runs_once(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(BUMP))
    await harness.press(message, run_blocks.RUN, user=ASKER)
    (posted,) = await after_run(harness, thread_ts, message)
    card = copy.deepcopy(posted)  # as people saw it: clicks replay it after updates
    assert "Approval needed" in card.text and f"<@{ASKER}>" in card.text
    assert BUMP in json.dumps(card.blocks)
    assert await total_of_12(harness) == "12.00"

    await harness.click("approve_once", card, user=APPROVER)
    await harness.slack.wait_for(lambda: len(posted_after(harness, thread_ts, message)) == 2)
    await harness.click("approve_once", card, user=APPROVER)  # a second click: nothing more
    await harness.slack.wait_for(lambda: harness.slack.ephemerals(APPROVER))
    await harness.idle()
    decided, ran = posted_after(harness, thread_ts, message)
    assert "Approved once" in json.dumps(decided.blocks) and "1 row affected" in ran.text
    assert await total_of_12(harness) == "13.00"
    assert [r["outcome"] for r in await audit(harness)] == [
        "awaiting_approval",
        "executing",
        "executed",
    ]


REFUSED = [
    # (database, sql, words in the reply, reason)
    (
        PRODUCTION,
        BUMP,
        "Production is read-only for dbagent. Here is the SQL for your change process:",
        "production is never written; the person hears what to do instead",
    ),
    (STAGING, "START TRANSACTION", "BEGIN, COMMIT and ROLLBACK are not run", "one at a time"),
]


@pytest.mark.parametrize(("database", "sql", "words", "reason"), REFUSED)
async def test_refused_runs_say_why_and_change_nothing(
    harness: SlackHarness, database: str, sql: str, words: str, reason: str
) -> None:
    thread_ts, message = await ask(harness, answer(sql, database))
    await harness.press(message, run_blocks.RUN, user=ASKER)
    (refusal,) = await after_run(harness, thread_ts, message)
    assert words in refusal.text, reason
    assert "Blocked:" not in refusal.text and f"<@{ASKER}>" in refusal.text  # for people
    assert sql.split()[0] in json.dumps(refusal.blocks)  # the SQL, to take elsewhere
    assert harness.cards(thread_ts, DM) == []
    assert await total_of_12(harness) == "12.00"


async def test_a_block_without_a_database_runs_where_the_clicker_chose(
    harness: SlackHarness,
) -> None:
    thread_ts, message = await ask(harness, f"{STAGING} or {PRODUCTION}?\n\n" + answer(READ, None))
    block_id, _ = element_of(message, run_blocks.RUN)

    # Run before choosing: told privately to choose, nothing runs.
    await harness.press(message, run_blocks.RUN, user=ASKER)
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(ASKER))
    assert note.text == runs.CHOOSE_FIRST
    # The menu's state in the Run payload says where.
    state = {block_id: {run_blocks.CHOOSE_DATABASE: PRODUCTION}}
    await harness.press(message, run_blocks.RUN, user=ASKER, state=state)
    (ran, _) = await after_run(harness, thread_ts, message)
    assert f"Ran on {PRODUCTION}: 4 rows" in ran.text

    # A name that is not configured is never used, whatever the payload says.
    state = {block_id: {run_blocks.CHOOSE_DATABASE: "shop-other"}}
    await harness.press(message, run_blocks.RUN, user=ASKER, state=state)
    await harness.slack.wait_for(lambda: len(harness.slack.ephemerals(ASKER)) == 2)
    assert len(await audit(harness)) == 1


async def test_a_pick_in_the_menu_is_remembered_for_the_run(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, f"{STAGING} or {PRODUCTION}?\n\n" + answer(READ, None))
    await harness.pick(message, run_blocks.CHOOSE_DATABASE, STAGING, user=ASKER)
    await harness.idle()
    await harness.press(message, run_blocks.RUN, user=ASKER)  # no menu state in this payload
    (ran, _) = await after_run(harness, thread_ts, message)
    assert f"Ran on {STAGING}: 4 rows" in ran.text


async def test_edit_and_run_opens_the_sql_in_a_modal_and_runs_the_edit(
    harness: SlackHarness,
) -> None:
    thread_ts, message = await ask(harness, answer(READ))
    await harness.press(message, run_blocks.EDIT, user=BYSTANDER)
    (view,) = await harness.slack.wait_for(lambda: harness.slack.views)
    sql_input, database_menu = (b["element"] for b in view.view["blocks"][:2])
    assert sql_input["initial_value"] == READ and sql_input["multiline"]
    assert database_menu["initial_option"]["value"] == STAGING
    assert READ not in view.view["private_metadata"]  # the modal names the answer, not the SQL

    edited = "SELECT id, customer FROM orders WHERE id = 12"
    sent = await harness.interact(
        harness.view_submission(view, user=BYSTANDER, sql=edited, database=PRODUCTION)
    )
    assert sent.status == 200 and sent.text == ""  # the modal closes
    ran, result = await after_run(harness, thread_ts, message)
    how = f":arrow_forward: <@{BYSTANDER}> edited and ran: Ran on {PRODUCTION}"
    assert ran.text.startswith(how)
    assert edited in ran.blocks[0]["text"]["text"]
    (csv,) = harness.slack.files_in(DM, thread_ts)
    assert csv.text.splitlines() == ["id,customer", "12,Linus"] and result.files == [csv.id]
    (record,) = await audit(harness)
    assert (record["requester"], record["sql"], record["database"]) == (
        BYSTANDER,
        edited,
        PRODUCTION,
    )


SUBMISSION_ERRORS = [
    # (sql, database, block with the error, message, reason)
    ("   ", STAGING, "sql", edit_and_run.EMPTY_SQL, "empty SQL runs nothing"),
    (READ, "shop-other", "database", edit_and_run.UNKNOWN_DATABASE, "only configured databases"),
    (READ, None, "database", edit_and_run.UNKNOWN_DATABASE, "a database must be chosen"),
]


@pytest.mark.parametrize(("sql", "database", "block", "error", "reason"), SUBMISSION_ERRORS)
async def test_edit_and_run_shows_problems_inline_and_runs_nothing(
    harness: SlackHarness, sql: str, database: str | None, block: str, error: str, reason: str
) -> None:
    thread_ts, message = await ask(harness, answer(READ))
    await harness.press(message, run_blocks.EDIT, user=ASKER)
    (view,) = await harness.slack.wait_for(lambda: harness.slack.views)
    sent = await harness.interact(
        harness.view_submission(view, user=ASKER, sql=sql, database=database)
    )
    assert sent.status == 200
    assert json.loads(sent.text) == {"response_action": "errors", "errors": {block: error}}, reason
    await harness.idle()
    assert posted_after(harness, thread_ts, message) == [] and await audit(harness) == []

    # Fixed and submitted again (the same modal): it runs.
    fixed = harness.view_submission(view, user=ASKER, sql=READ, database=STAGING)
    assert (await harness.interact(fixed)).text == ""
    await after_run(harness, thread_ts, message)
    assert len(await audit(harness)) == 1


async def test_a_replayed_submission_runs_once(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(READ))
    await harness.press(message, run_blocks.EDIT, user=ASKER)
    (view,) = await harness.slack.wait_for(lambda: harness.slack.views)
    body = harness.form(harness.view_submission(view, user=ASKER, sql=READ, database=STAGING))
    headers = signed_headers(body)
    for _ in range(2):
        await harness.post(body, "application/x-www-form-urlencoded", headers)
    await after_run(harness, thread_ts, message)
    assert len(await audit(harness)) == 1


async def test_sql_too_long_for_the_editor_is_refused_privately(harness: SlackHarness) -> None:
    ids = ", ".join(str(i) for i in range(1_000))
    _, message = await ask(harness, answer(f"SELECT id FROM orders WHERE id IN ({ids})"))
    await harness.press(message, run_blocks.EDIT, user=ASKER)
    (note,) = await harness.slack.wait_for(lambda: harness.slack.ephemerals(ASKER))
    assert "too long to edit" in note.text and harness.slack.views == []


async def test_a_forged_click_is_refused_and_runs_nothing(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(BUMP))
    block_id, button = element_of(message, run_blocks.RUN)
    payload = harness.action_payload(
        message, run_blocks.RUN, block_id, {"value": button["value"]}, user=ASKER
    )
    body = harness.form(payload)
    forged = signed_headers(body, secret="not-" + SIGNING_SECRET)
    sent = await harness.post(body, "application/x-www-form-urlencoded", forged)
    assert sent.status == 401
    stale = signed_headers(body, at=1_000_000_000)  # signed long ago: a replay from the past
    assert (await harness.post(body, "application/x-www-form-urlencoded", stale)).status == 401
    await harness.idle()
    assert posted_after(harness, thread_ts, message) == [] and await audit(harness) == []


async def test_a_replayed_click_does_nothing_the_second_time(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(READ))
    block_id, button = element_of(message, run_blocks.RUN)
    payload = harness.action_payload(
        message, run_blocks.RUN, block_id, {"value": button["value"]}, user=ASKER
    )
    body = harness.form(payload)
    headers = signed_headers(body)
    first = await harness.post(body, "application/x-www-form-urlencoded", headers)
    await after_run(harness, thread_ts, message)
    again = await harness.post(body, "application/x-www-form-urlencoded", headers)
    await harness.idle()
    assert (first.status, again.status) == (200, 200)
    assert len(posted_after(harness, thread_ts, message)) == 2  # one run: its line and result
    assert len(await audit(harness)) == 1

    # A new click (a new trigger) runs again.
    await harness.press(message, run_blocks.RUN, user=ASKER)
    await harness.slack.wait_for(lambda: len(posted_after(harness, thread_ts, message)) == 4)
    assert len(await audit(harness)) == 2


async def test_a_button_naming_an_unknown_answer_runs_nothing(harness: SlackHarness) -> None:
    thread_ts, message = await ask(harness, answer(BUMP))
    for action in (run_blocks.RUN, run_blocks.EDIT):
        await harness.click_value(action, "not-a-known-id", message, user=ASKER)
    notes = await harness.slack.wait_for(lambda: len(harness.slack.ephemerals(ASKER)) == 2)
    assert notes
    await harness.idle()
    assert all(n.text == runs.UNKNOWN_PROPOSAL for n in harness.slack.ephemerals(ASKER))
    assert posted_after(harness, thread_ts, message) == [] and harness.slack.views == []
    assert await audit(harness) == [] and await total_of_12(harness) == "12.00"


async def test_agent_mode_answers_get_buttons_too(harness: SlackHarness) -> None:
    harness.model.script(say(answer(READ)))
    thread_ts, _ = await harness.mention("what would you run?")
    (message,) = await harness.slack.wait_for(lambda: harness.thread(thread_ts))
    assert [b["text"]["text"] for b in action_elements(message)] == [
        f"Run on {STAGING}",
        "Edit & run",
    ]
