"""The Undo card says what it is first — whose approved change it puts back, when, and how
many rows in which table — summarises the inverse statements, and attaches the full list."""

from __future__ import annotations

import copy
import json

from tests.fakes.model_server import call, calls, say
from tests.slack.conftest import APPROVER, ASKER, CHANNEL, SCHEMA, STAGING, SlackHarness, run_sql

RAISE_ALL = "UPDATE orders SET total = total + 1"


async def totals(harness: SlackHarness) -> list[tuple]:
    return await run_sql(harness.shop_url, [f"SELECT id, total FROM {SCHEMA}.orders ORDER BY id"])


async def test_an_undo_card_says_what_it_undoes_first_and_attaches_every_statement(
    harness: SlackHarness,
) -> None:
    slack = harness.slack
    before = await totals(harness)
    harness.model.script(
        calls(call("execute_query", {"database": STAGING, "sql": RAISE_ALL})), say("Raised.")
    )
    thread_ts, _ = await harness.mention("raise every total by one")
    card = await harness.wait_for_card(thread_ts)
    await harness.click("approve_once", card, user=APPROVER)
    await slack.wait_for(lambda: any("Raised." in t for t in harness.texts(thread_ts)))
    await harness.idle()
    decided = copy.deepcopy(slack.message(CHANNEL, card.ts))
    await harness.press(decided, "undo", user=ASKER)
    cards = await slack.wait_for(
        lambda: len(harness.cards(thread_ts)) >= 2 and harness.cards(thread_ts)
    )
    await harness.idle()
    undo = copy.deepcopy(next(c for c in cards if c.ts != card.ts))

    header, first = undo.blocks[0], undo.blocks[1]
    assert header["type"] == "header" and header["text"]["text"].startswith(
        ":leftwards_arrow_with_hook: Undo"
    )
    said = first["text"]["text"]
    assert said.startswith(f"*Undo of the change approved by <@{APPROVER}> at <!date^")
    assert said.endswith(f"puts back {len(before)} rows in `orders`")
    assert undo.text.startswith(f"Undo of the change approved by <@{APPROVER}>")
    # The inverse statements summarised: three as SQL, the rest counted, one impact section.
    shown = json.dumps(undo.blocks)
    assert shown.count("UPDATE `orders`") == 3
    assert f"{len(before)} inverse statements" in shown
    assert shown.count("*Rows:*") == 1 and f"*Rows:* {len(before)} rows" in shown
    # The full list, in a file in the thread.
    (listed,) = [f for f in slack.files_in(CHANNEL, thread_ts) if f.filename.endswith(".sql")]
    assert listed.text.count("UPDATE `orders`") == len(before)

    await harness.click("approve_once", undo, user=APPROVER)
    await slack.wait_for(lambda: slack.message(CHANNEL, undo.ts).text.startswith("Approved"))
    await harness.idle()
    assert await totals(harness) == before
