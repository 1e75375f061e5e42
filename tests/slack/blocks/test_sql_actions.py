"""Block Kit for Run / Edit & run: ids only in values, Slack's limits, escaped output.

slack_sdk's own Block Kit models check the shapes and limits (they round-trip and
validate what we build), as a second opinion next to the fake Slack.
"""

from __future__ import annotations

import json

import pytest
from slack_sdk.models.blocks import Block
from slack_sdk.models.views import View

from bot.config import DatabaseConfig
from bot.slack.blocks import sql_actions as run_blocks

PROPOSAL = "0123456789abcdef0123456789abcdef"
DATABASES = [
    DatabaseConfig(name="shop-staging", url="mysql://u@h/shop", environment="staging"),
    DatabaseConfig(name="shop-prod", url="mysql://u@h/shop", environment="production"),
]


def valid_block(block: dict) -> bool:
    parsed = Block.parse(block)
    assert parsed is not None
    parsed.validate_json()
    return parsed.to_dict() == block


@pytest.mark.parametrize("database", ["shop-staging", None])
def test_the_buttons_are_valid_block_kit_and_carry_only_the_id(database: str | None) -> None:
    block = run_blocks.sql_actions(PROPOSAL, database, DATABASES)
    assert valid_block(block)
    values = [e["value"] for e in block["elements"] if e["type"] == "button"]
    assert values == [PROPOSAL, PROPOSAL]


def test_a_long_database_name_still_fits_buttons_and_menus() -> None:
    name = "x" * 64  # the longest name the configuration allows
    wide = [DatabaseConfig(name=name, url="mysql://u@h/shop", environment="development")]
    for database in (name, None):
        block = run_blocks.sql_actions(PROPOSAL, database, wide)
        assert valid_block(block)
    (menu, _, _) = block["elements"]
    (option,) = menu["options"]
    assert len(option["text"]["text"]) == 75 and option["value"] == name


def test_the_editor_holds_the_sql_and_the_database_and_names_only_the_proposal() -> None:
    sql = "SELECT * FROM orders WHERE note <> '<!channel>'"
    view = run_blocks.edit_view(PROPOSAL, sql, DATABASES, "shop-prod")
    parsed = View(**view)
    parsed.validate_json()
    assert parsed.to_dict() == view
    sql_input, menu = (block["element"] for block in view["blocks"][:2])
    assert sql_input["initial_value"] == sql and sql_input["max_length"] == 3_000
    assert menu["initial_option"]["value"] == "shop-prod"
    assert run_blocks.proposal_of_view(view) == PROPOSAL
    assert json.loads(view["private_metadata"]) == {"proposal": PROPOSAL}


def test_an_editor_for_sql_naming_no_database_preselects_nothing() -> None:
    view = run_blocks.edit_view(PROPOSAL, "SELECT 1", DATABASES, None)
    assert "initial_option" not in view["blocks"][1]["element"]


METADATA = [
    # (private_metadata, proposal, reason)
    ('{"proposal": "abc"}', "abc", "ours"),
    ("", None, "empty"),
    ("not json", None, "not JSON"),
    ('["abc"]', None, "not an object"),
    ('{"proposal": 3}', None, "not a string"),
]


@pytest.mark.parametrize(("metadata", "proposal", "reason"), METADATA)
def test_the_proposal_of_a_view(metadata: str, proposal: str | None, reason: str) -> None:
    assert run_blocks.proposal_of_view({"private_metadata": metadata}) == proposal, reason


def test_what_ran_and_what_was_refused_are_escaped() -> None:
    sql = "SELECT '<!here>' FROM t"
    ran = run_blocks.ran_message("U0ASKER", sql, "Ran on <db>: 1 row returned", edited=True)
    refused = run_blocks.refused_message("U0ASKER", sql, "Blocked: <!channel>")
    for message in (ran, refused):
        shown = json.dumps(message)
        assert "<!here>" not in shown and "<!channel>" not in shown
        assert "<@U0ASKER>" in message["text"]
        assert all(valid_block(block) for block in message["blocks"])
    assert "edited and ran" in ran["text"] and "&lt;db&gt;" in ran["text"]
