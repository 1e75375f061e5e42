"""The SQL an answer proposes: stored per block, buttons right after it, text as before."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import DatabaseConfig, Settings
from bot.slack import delivery
from bot.slack.blocks import answer
from bot.slack.blocks import sql_actions as run_blocks
from bot.slack.proposals import MAX_WITH_BUTTONS, Proposals
from bot.slack.sessions import Thread
from bot.state import State, open_state
from tests.fakes.slack_server import FakeSlack
from tests.slack.block_limits import assert_valid_message
from tests.slack.conftest import BOT_TOKEN

THREAD = Thread("T1", "C1", "1700000000.000100")
STAGING = DatabaseConfig(name="shop-staging", url="mysql://u@h/shop", environment="staging")
PROD = DatabaseConfig(name="shop-prod", url="mysql://u@h/shop", environment="production")


@pytest.fixture
def proposals(state: State) -> Proposals:
    return Proposals(state.proposals, [STAGING, PROD], clock=lambda: 1_000.0)


def action_blocks(messages: list[dict]) -> list[dict]:
    return [b for m in messages for b in m["blocks"] if b["type"] == "actions"]


def block_types(message: dict) -> list[str]:
    return [b["type"] for b in message["blocks"]]


async def test_an_answer_without_sql_is_laid_out_as_a_plain_answer(proposals: Proposals) -> None:
    text = "\n\n".join(f"Paragraph {i}: " + "words " * 80 for i in range(20))
    plain = [answer.answer_message(piece) for piece in answer.answer_pieces(text)]
    assert await proposals.messages(THREAD, text) == plain


async def test_a_short_answer_with_two_blocks_is_one_message_with_buttons_after_each(
    proposals: Proposals, state: State
) -> None:
    text = (
        "shop-staging and shop-prod share a schema.\n\nCount them:\n"
        "```sql\nSELECT COUNT(*) FROM orders\n```\n\nBy status on shop-staging:\n"
        "```sql\nSELECT status, COUNT(*) FROM orders GROUP BY status\n```\nThat's all."
    )
    (message,) = await proposals.messages(THREAD, text)
    assert block_types(message) == ["markdown", "actions", "markdown", "actions", "markdown"]
    first, second = action_blocks([message])
    # The first block names no database: a menu of the configured ones, and plain "Run".
    menu, run, edit = first["elements"]
    assert menu["type"] == "static_select"
    assert [o["value"] for o in menu["options"]] == ["shop-staging", "shop-prod"]
    assert (run["text"]["text"], edit["text"]["text"]) == ("Run", "Edit & run")
    # The second names shop-staging.
    assert [e["text"]["text"] for e in second["elements"]] == ["Run on shop-staging", "Edit & run"]
    # Values are ids only; the SQL is in the store, with its thread.
    ids = [first["elements"][1]["value"], second["elements"][0]["value"]]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert "SELECT" not in json.dumps([first, second])
    stored = [await state.proposals.get(i) for i in ids]
    assert [s["sql"] for s in stored] == [
        "SELECT COUNT(*) FROM orders",
        "SELECT status, COUNT(*) FROM orders GROUP BY status",
    ]
    assert [s["database"] for s in stored] == [None, "shop-staging"]
    assert stored[0]["session_id"] == THREAD.session_id
    assert (stored[0]["channel"], stored[0]["thread_ts"]) == (THREAD.channel, THREAD.thread_ts)
    # The text reads as before: everything shown, escaped, fences intact.
    shown = "\n".join(b["text"] for b in message["blocks"] if b["type"] == "markdown")
    assert "SELECT COUNT(*)" in shown and "That's all." in shown and shown.count("```") == 4


async def test_a_long_answer_still_fits_slacks_limits(proposals: Proposals) -> None:
    code = "\n".join(f"SELECT {i} FROM orders WHERE total < {i};" for i in range(300))
    text = f"On shop-staging:\n```sql\n{code}\n```\n" + "\n\n".join(["More words. " * 50] * 10)
    messages = await proposals.messages(THREAD, text)
    assert len(messages) > 2 and len(action_blocks(messages)) == 1
    for message in messages:
        pieces = [b["text"] for b in message["blocks"] if b["type"] == "markdown"]
        assert sum(len(piece) for piece in pieces) <= 12_000  # Slack's limit per message
        assert all(piece.count("```") % 2 == 0 for piece in pieces)
        assert_valid_message(message)
    # The buttons follow the last piece of the SQL block.
    with_buttons = next(m for m in messages if "actions" in block_types(m))
    assert "SELECT 299 FROM orders" in with_buttons["blocks"][0]["text"]


async def test_only_the_first_blocks_get_buttons_and_all_are_shown(proposals: Proposals) -> None:
    text = "On shop-staging:\n" + "\n".join(f"```sql\nSELECT {i}\n```" for i in range(7))
    messages = await proposals.messages(THREAD, text)
    assert len(action_blocks(messages)) == MAX_WITH_BUTTONS
    shown = json.dumps(messages)
    assert all(f"SELECT {i}" in shown for i in range(7))
    assert "first 5 SQL blocks" in json.dumps(messages[-1]["blocks"][-1])
    assert all(len(m["blocks"]) <= 50 for m in messages)


async def test_an_unlabelled_block_the_classifier_reads_as_sql_gets_buttons(
    proposals: Proposals,
) -> None:
    text = "Try:\n```\nSELECT id FROM orders\n```\nOr in Python:\n```python\nprint(1)\n```"
    assert len(action_blocks(await proposals.messages(THREAD, text))) == 1


async def test_a_chosen_database_is_remembered_only_when_configured(
    proposals: Proposals, state: State
) -> None:
    (message,) = await proposals.messages(THREAD, "```sql\nSELECT 1\n```")
    proposal_id = action_blocks([message])[0]["block_id"].removeprefix(run_blocks.ACTIONS_PREFIX)
    assert not await proposals.choose(proposal_id, "nope")
    assert not await proposals.choose("unknown-id", "shop-prod")
    assert await proposals.choose(proposal_id, "shop-prod")
    proposal = await proposals.get(proposal_id)
    assert proposal is not None and proposal.chosen == "shop-prod" and proposal.database is None


async def test_an_answer_whose_sql_cannot_be_stored_is_posted_without_buttons(
    tmp_path: Path, slack: FakeSlack
) -> None:
    state = await open_state(Settings(dbagent_state_dir=tmp_path / "closed", databases=[]))
    await state.close()  # every write fails from now on
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url)
    text = "On shop-staging:\n```sql\nSELECT 1\n```"
    assert await delivery.post_text(client, THREAD, text, Proposals(state.proposals, [STAGING]))
    (message,) = slack.thread(THREAD.channel, THREAD.thread_ts)
    assert message.blocks == answer.answer_message(text)["blocks"]
